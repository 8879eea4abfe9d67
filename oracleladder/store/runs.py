"""``runs``: each run (a compile, a probe, an import ...), the process that runs it, and its totals."""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone
from typing import Any

import aiosqlite
from pydantic import BaseModel

from .core import Core
from .rows import now, process_gone, process_owner, to_json, where


class RunRecord(BaseModel):
    """One run (a compile, a probe, an import ...) and its totals."""

    id: str
    kind: str
    config: Any
    started_at: str
    finished_at: str | None = None
    status: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    reused: int = 0  # rollouts earlier runs paid for that this run asked again and took from the cache


_START = "INSERT INTO runs (id, kind, config, started_at, status, owner) VALUES (?, ?, ?, ?, ?, ?)"
_FINISH = """
UPDATE runs SET finished_at = ?, status = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?,
                usage = ?
WHERE id = ?
"""
_SELECT = ("SELECT id, kind, config, started_at, finished_at, status, tokens_in, tokens_out, cost_usd, usage, "
           "(SELECT COUNT(*) FROM run_reuse u JOIN names n ON n.id = u.run_ref WHERE n.name = runs.id) AS reused "
           "FROM runs")


class RunsTable(Core):
    async def start_run(self, kind: str, config: Any = None, *, run_id: str | None = None) -> str:
        """Record a run as started; returns its id (generated unless given)."""
        rid = run_id or f"{kind}-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        await self._submit(_START, (rid, kind, to_json(config), now(), "running", process_owner(os.getpid())))
        return rid

    async def finish_run(self, run_id: str, status: str = "done",
                         usage: dict[str, Any] | Any | None = None) -> None:
        """Mark a run finished with its status and usage (``tokens_in``, ``tokens_out``,
        ``cost_usd`` are lifted into columns; the whole dict is kept as JSON)."""
        if usage is not None and not isinstance(usage, dict):
            usage = usage.as_dict() if hasattr(usage, "as_dict") else json.loads(to_json(usage))
        u = usage or {}
        cost = u.get("cost_usd")
        params = (now(), status, int(u.get("tokens_in") or 0), int(u.get("tokens_out") or 0),
                  None if cost is None else float(cost), None if usage is None else to_json(usage),
                  run_id)
        await self._submit(_FINISH, params)

    async def get_run(self, run_id: str) -> RunRecord | None:
        rows = await self._fetch(_SELECT + " WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    async def runs(self, kind: str | None = None) -> list[RunRecord]:
        sql, params = where({"kind": kind})
        return [_run(r) for r in await self._fetch(_SELECT + sql + " ORDER BY rowid", params)]


def _run(r: Any) -> RunRecord:
    return RunRecord(id=r["id"], kind=r["kind"], config=json.loads(r["config"]), started_at=r["started_at"],
                     finished_at=r["finished_at"], status=r["status"], tokens_in=r["tokens_in"],
                     tokens_out=r["tokens_out"], cost_usd=r["cost_usd"],
                     usage=None if r["usage"] is None else json.loads(r["usage"]), reused=r["reused"])


async def mark_interrupted(conn: aiosqlite.Connection) -> None:
    """Runs still 'running' whose process is gone (killed outright) become 'interrupted'."""
    async with conn.execute("SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL") as cur:
        gone = [(rid,) for rid, owner in await cur.fetchall() if process_gone(owner)]
    if gone:
        await conn.executemany("UPDATE runs SET status = 'interrupted' WHERE id = ? AND status = 'running'", gone)
