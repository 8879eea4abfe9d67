"""``failed_jobs``: probe jobs whose call failed for good (no answer, so no verdict)."""

from __future__ import annotations

from pydantic import BaseModel

from .core import Core
from .rows import name_id, now, where


class FailedJob(BaseModel):
    """A probe job whose call failed for good: no answer, so no verdict; a rerun asks again."""

    run_id: str
    student: str
    source: str
    pid: str
    target: str
    k: int
    call_key: str
    reason: str


_PUT = """
INSERT OR REPLACE INTO failed_jobs (student, source, pid, target, k, call_key, run_id, reason, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# a later rollout of the same job supersedes its failure
_ANSWERED = (f"EXISTS (SELECT 1 FROM rollouts r WHERE r.student_ref = {name_id('f.student')} AND "
             f"r.source_ref = {name_id('f.source')} AND r.pid_ref = {name_id('f.pid')} AND "
             f"r.target_ref = {name_id('f.target')} AND r.k = f.k)")


class FailedJobsTable(Core):
    async def put_failed_job(self, job: FailedJob, *, wait: bool = True) -> None:
        """Record a job whose call failed for good (replacing an earlier failure of the same job)."""
        params = (job.student, job.source, job.pid, job.target, job.k, job.call_key, job.run_id,
                  job.reason, now())
        await self._submit(_PUT, params, wait)

    async def failed_jobs(self, student: str | None = None, run_id: str | None = None, *,
                          source: str | None = None) -> list[FailedJob]:
        """Jobs whose last call failed and that have no rollout since (a rerun that answers a job
        supersedes its failure), filtered by any of student, run_id, source; in insertion order."""
        sql, params = where({"f.student": student, "f.run_id": run_id, "f.source": source}, f"NOT {_ANSWERED}")
        rows = await self._fetch("SELECT run_id, student, source, pid, target, k, call_key, reason "
                                 f"FROM failed_jobs f{sql} ORDER BY f.rowid", params)
        return [FailedJob(**dict(r)) for r in rows]
