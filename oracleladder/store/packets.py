"""``packets``: the accepted code packet of each code problem and teacher (`domains.code`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .core import Core
from .rows import now, to_json, where


class StoredPacket(BaseModel):
    """A code packet that passed its checks, as the teacher ``source`` wrote it at ``attempt``."""

    pid: str
    source: str
    attempt: int
    packet: dict[str, Any]
    prompt_version: str | None = None
    created_at: str


_PUT = """
INSERT OR REPLACE INTO packets (pid, source, attempt, packet, prompt_version, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""


class PacketsTable(Core):
    async def put_packet(self, pid: str, source: str, packet: Any, *, attempt: int,
                         prompt_version: str | None = None, wait: bool = True) -> None:
        """Store the accepted packet (a model or dict) of ``pid`` by ``source``, replacing an earlier one."""
        await self._submit(_PUT, (pid, source, int(attempt), to_json(packet), prompt_version, now()), wait)

    async def packets(self, source: str, pids: Sequence[str] | None = None) -> list[StoredPacket]:
        """The accepted packets of ``source`` (of ``pids`` only, when given), in insertion order."""
        sql, params = where({"source": source})
        rows = await self._fetch("SELECT pid, source, attempt, packet, prompt_version, created_at "
                                 f"FROM packets{sql} ORDER BY rowid", params)
        wanted = None if pids is None else set(pids)
        return [StoredPacket(pid=r["pid"], source=r["source"], attempt=r["attempt"], packet=json.loads(r["packet"]),
                             prompt_version=r["prompt_version"], created_at=r["created_at"])
                for r in rows if wanted is None or r["pid"] in wanted]
