"""``rollouts``: each student answer with its verdict. The answer is its call's (read through the
call) unless it differs from it or its call is not in this store. The strings a rollout repeats
(student, source, pid, target, run id) are kept once in ``names``; a rollout holds their ids, and
the view ``rollouts_named`` reads them back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..schemas.models import Rollout, Verdict
from ..schemas.types import GradeStatus, Label
from .core import Core
from .rows import name_id, now, pack_key, unpack, unpack_key, where

_PUT_NAMES = "INSERT INTO names (name) VALUES (?), (?), (?), (?), (?) ON CONFLICT(name) DO NOTHING"
# a rollout of the same key (a cached rerun asked the same call) keeps the run that paid for it: the new
# verdict replaces the old, the rerun is recorded in run_reuse (before the upsert, while the old run is known)
_KEY = f"""student_ref = {name_id("?1")} AND source_ref = {name_id("?2")} AND pid_ref = {name_id("?3")}
    AND target_ref = {name_id("?4")} AND k = ?5 AND call_key = ?6"""
_PUT_REUSE = f"""
INSERT OR IGNORE INTO run_reuse (run_ref, student_ref, source_ref, pid_ref, target_ref, k, call_key)
SELECT {name_id("?7")}, student_ref, source_ref, pid_ref, target_ref, k, call_key FROM rollouts
WHERE {_KEY} AND run_ref != {name_id("?7")}
"""
# the response is left NULL when it is the one its call stored (the readers take the call's): the
# same text, the call's unpacked (it may be packed at another zstd level, or not at all); it is packed
# only when it is stored (it is its call's as a rule, and packing a 10K answer costs 4-6x unpacking one)
_PUT = f"""
INSERT INTO rollouts
    (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, label, reason, extracted, status,
     created_at, response)
VALUES ({name_id("?1")}, {name_id("?2")}, {name_id("?3")}, {name_id("?4")}, ?5, ?6, {name_id("?7")}, ?9, ?10, ?11,
        ?12, ?13,
        CASE WHEN EXISTS (SELECT 1 FROM calls WHERE key = ?6 AND ladder_text(response) = ?8)
             THEN NULL ELSE ladder_pack(?8) END)
ON CONFLICT (student_ref, source_ref, pid_ref, target_ref, k, call_key) DO UPDATE SET
    label = excluded.label, reason = excluded.reason, extracted = excluded.extracted, status = excluded.status,
    response = excluded.response
"""
_REUSED = """
SELECT u.run_ref, student.name, source.name, pid.name, target.name, u.k, u.call_key
FROM run_reuse u JOIN names student ON student.id = u.student_ref JOIN names source ON source.id = u.source_ref
     JOIN names pid ON pid.id = u.pid_ref JOIN names target ON target.id = u.target_ref
"""
# the runs that reused a student's rollouts on a source
_REUSERS = """
SELECT run.name, pid.name, target.name, u.k, u.call_key
FROM run_reuse u JOIN names run ON run.id = u.run_ref JOIN names pid ON pid.id = u.pid_ref
     JOIN names target ON target.id = u.target_ref
WHERE u.student_ref = (SELECT id FROM names WHERE name = ?) AND u.source_ref = (SELECT id FROM names WHERE name = ?)
"""
# a rollout a run answered: it paid for its call, or it reused it from an earlier run (run_reuse)
_ANSWERED_BY = f"""
WHERE r.student = ?2 AND (r.run_id = ?1 OR EXISTS (
    SELECT 1 FROM run_reuse u JOIN rollouts x ON x.student_ref = u.student_ref AND x.source_ref = u.source_ref
        AND x.pid_ref = u.pid_ref AND x.target_ref = u.target_ref AND x.k = u.k AND x.call_key = u.call_key
    WHERE x.rowid = r.seq AND u.run_ref = {name_id("?1")}))
"""
_SELECT = """
SELECT r.run_id, r.student, r.source, r.pid, r.target, r.k, r.call_key,
       COALESCE(r.response, (SELECT c.response FROM calls c WHERE c.key = r.call_key)) AS response,
       r.label, r.reason, r.extracted, r.status
FROM rollouts_named r
"""


class RolloutsTable(Core):
    async def put_rollout(self, rollout: Rollout, *, wait: bool = True) -> None:
        """Store a rollout with its verdict. Keyed by (student, source, pid, target, k, call_key): a
        rerun that reuses a cached call replaces the verdict, keeps the run that paid for the call, and is
        recorded as having reused it (`reuses`)."""
        v = rollout.verdict
        names = (rollout.student, rollout.source, rollout.pid, rollout.target, rollout.run_id)
        params = (*names[:4], rollout.k, pack_key(rollout.call_key), rollout.run_id, rollout.response,
                  Label(v.label).value, v.reason, v.extracted, GradeStatus(v.status).value, now())
        await self._submit_all((_PUT_NAMES, _PUT_REUSE, _PUT), (names, params[:7], params), wait)

    async def rollouts(self, student: str | None = None, run_id: str | None = None, *,
                       pid: str | None = None, target: str | None = None,
                       source: str | None = None) -> list[Rollout]:
        """Stored rollouts, filtered by any of student, run_id, pid, target, source; in insertion order."""
        sql, params = where({"r.student": student, "r.run_id": run_id, "r.pid": pid, "r.target": target,
                             "r.source": source})
        return [_rollout(r) for r in await self._fetch(_SELECT + sql + " ORDER BY r.seq", params)]

    async def answered_by(self, run_id: str, student: str) -> list[Rollout]:
        """The student's rollouts that a run answered: those it paid for, and those a cached rerun reused
        (which keep the run that paid, `put_rollout`); in insertion order. A run's own results, as a
        screen or a benchmark reads them."""
        return [_rollout(r) for r in await self._fetch(_SELECT + _ANSWERED_BY + " ORDER BY r.seq", (run_id, student))]

    async def reused(self, rollouts: Sequence[Rollout]) -> tuple[int, int]:
        """Of ``rollouts``, how many a later run reused, and how many runs reused any of them."""
        keys = {(r.student, r.source, r.pid, r.target, r.k, pack_key(r.call_key)) for r in rollouts}
        rows = await self._fetch(_REUSED)
        hit = [(r[0], key) for r in rows if (key := tuple(r[1:7])) in keys]
        return len({key for _, key in hit}), len({run for run, _ in hit})

    async def reusers(self, student: str, source: str) -> dict[tuple[str, str, int, str], list[str]]:
        """The runs that reused each of a student's rollouts on ``source`` (asked its call again and took the
        cached answer), by the rollout's (pid, target, k, call key)."""
        out: dict[tuple[str, str, int, str], list[str]] = {}
        for run, pid, target, k, key in await self._fetch(_REUSERS, (student, source)):
            out.setdefault((pid, target, k, unpack_key(key)), []).append(run)
        return out

    async def students(self) -> list[str]:
        """The students with rollouts in the store, by name."""
        return [r[0] for r in await self._fetch("SELECT DISTINCT student FROM rollouts_named ORDER BY student")]

    async def rollout_count(self, student: str | None = None, run_id: str | None = None, *,
                            status: GradeStatus | None = None) -> int:
        sql, params = where({"student": student, "run_id": run_id,
                             "status": None if status is None else GradeStatus(status).value})
        return int((await self._fetch("SELECT COUNT(*) FROM rollouts_named" + sql, params))[0][0])


def _rollout(r: Any) -> Rollout:
    verdict = Verdict(label=Label(r["label"]), reason=r["reason"], extracted=r["extracted"],
                      status=GradeStatus(r["status"]))
    return Rollout(run_id=r["run_id"], student=r["student"], pid=r["pid"], target=r["target"], k=r["k"],
                   call_key=unpack_key(r["call_key"]), response=unpack(r["response"]), verdict=verdict,
                   source=r["source"])
