"""``screen_verdicts``: an anchor screen's verdict on each family of a diagnostic set (`ladder screen`)."""

from __future__ import annotations

import json

from pydantic import BaseModel

from .core import Core
from .rows import now, to_json


class ScreenVerdict(BaseModel):
    """An anchor screen's verdict on one family of a diagnostic set (`ladder screen`)."""

    set_name: str
    pid: str
    source: str  # the roadmap set screened (the teacher's model string, or TEACHER@granularity)
    anchor: str
    rule: str  # default or direct-only
    k: int
    max_tokens: int
    verdict: str  # kept, solved_directly, milestone_unsolved, structural or incomplete
    reason: str
    direct: int  # correct C1 attempts of K
    stage0: dict[str, float]  # the anchor's solve rate per tested milestone ("m<index>")
    run_id: str


_COLUMNS = ("set_name", "pid", "source", "anchor", "rule", "k", "max_tokens", "verdict", "reason", "direct",
            "stage0", "run_id")
_PUT = (f"INSERT OR REPLACE INTO screen_verdicts ({', '.join(_COLUMNS)}, created_at) "
        f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})")


class ScreenTable(Core):
    async def put_screen_verdict(self, v: ScreenVerdict, *, wait: bool = True) -> None:
        """Store a family's verdict in a set, replacing an earlier screen's."""
        row = {**v.model_dump(), "stage0": to_json(v.stage0)}
        await self._submit(_PUT, (*(row[c] for c in _COLUMNS), now()), wait)

    async def screen_verdicts(self, set_name: str) -> list[ScreenVerdict]:
        """A set's verdicts, in the order they were first stored."""
        rows = await self._fetch(f"SELECT {', '.join(_COLUMNS)} FROM screen_verdicts WHERE set_name = ? "
                                 "ORDER BY rowid", (set_name,))
        return [ScreenVerdict(**{**dict(r), "stage0": json.loads(r["stage0"])}) for r in rows]

    async def screen_sets(self) -> list[str]:
        rows = await self._fetch("SELECT DISTINCT set_name FROM screen_verdicts ORDER BY set_name")
        return [r["set_name"] for r in rows]
