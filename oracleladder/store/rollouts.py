"""``rollouts``: each student answer with its verdict. The answer is its call's (read through the
call) unless it differs from it or its call is not in this store."""

from __future__ import annotations

from typing import Any

from ..schemas.models import Rollout, Verdict
from ..schemas.types import GradeStatus, Label
from .core import Core
from .rows import now, pack, unpack, where

# the response is left NULL when it is the one its call stored (the readers take the call's)
_PUT = """
INSERT OR REPLACE INTO rollouts
    (student, source, pid, target, k, call_key, run_id, response, label, reason, extracted, status,
     created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
        CASE WHEN EXISTS (SELECT 1 FROM calls WHERE key = ?6 AND response = ?8) THEN NULL ELSE ?8 END,
        ?9, ?10, ?11, ?12, ?13)
"""
_SELECT = """
SELECT r.run_id, r.student, r.source, r.pid, r.target, r.k, r.call_key,
       COALESCE(r.response, (SELECT c.response FROM calls c WHERE c.key = r.call_key)) AS response,
       r.label, r.reason, r.extracted, r.status
FROM rollouts r
"""


class RolloutsTable(Core):
    async def put_rollout(self, rollout: Rollout, *, wait: bool = True) -> None:
        """Store a rollout with its verdict. Keyed by (student, source, pid, target, k, call_key): a
        rerun that reuses a cached call replaces the row (taking the new run_id), not duplicates it."""
        v = rollout.verdict
        params = (rollout.student, rollout.source, rollout.pid, rollout.target, rollout.k, rollout.call_key,
                  rollout.run_id, pack(rollout.response), Label(v.label).value, v.reason, v.extracted,
                  GradeStatus(v.status).value, now())
        await self._submit(_PUT, params, wait)

    async def rollouts(self, student: str | None = None, run_id: str | None = None, *,
                       pid: str | None = None, target: str | None = None,
                       source: str | None = None) -> list[Rollout]:
        """Stored rollouts, filtered by any of student, run_id, pid, target, source; in insertion order."""
        sql, params = where({"r.student": student, "r.run_id": run_id, "r.pid": pid, "r.target": target,
                             "r.source": source})
        return [_rollout(r) for r in await self._fetch(_SELECT + sql + " ORDER BY r.rowid", params)]

    async def rollout_count(self, student: str | None = None, run_id: str | None = None, *,
                            status: GradeStatus | None = None) -> int:
        sql, params = where({"student": student, "run_id": run_id,
                             "status": None if status is None else GradeStatus(status).value})
        return int((await self._fetch("SELECT COUNT(*) FROM rollouts" + sql, params))[0][0])


def _rollout(r: Any) -> Rollout:
    verdict = Verdict(label=Label(r["label"]), reason=r["reason"], extracted=r["extracted"],
                      status=GradeStatus(r["status"]))
    return Rollout(run_id=r["run_id"], student=r["student"], pid=r["pid"], target=r["target"], k=r["k"],
                   call_key=r["call_key"], response=unpack(r["response"]), verdict=verdict, source=r["source"])
