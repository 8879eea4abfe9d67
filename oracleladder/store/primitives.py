"""``primitives``, ``prim_solutions``, ``prim_plans``, ``prim_scores`` and ``prim_answer_verdicts``: PRIM's
diagnosis (docs/prim.md) — each problem's primitives (one per provenance and author), its reference
solution, a teacher's plan, the judge's score of each primitive a student wrote, and an answer
judge's verdicts."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from ..schemas.prim import PrimPrimitive
from .core import Core
from .rows import now, to_json, where

_PUT = """
INSERT INTO primitives (pid, provenance, author, family, primitive, created_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(pid, provenance, author) DO UPDATE SET family = excluded.family, primitive = excluded.primitive
"""
_PUT_SOLUTION = """
INSERT INTO prim_solutions (pid, solution, created_at) VALUES (?, ?, ?)
ON CONFLICT(pid) DO UPDATE SET solution = excluded.solution
"""


class Judged(BaseModel):
    """What a judge's row is on: one rollout (its student, roadmap set, problem, target and sample) and
    the judge."""

    student: str
    source: str
    pid: str
    target: str
    k: int
    judge: str


class PrimScore(Judged):
    """The judge on one predicted primitive: ``status`` scored (V, gate, mechanism and the score;
    gate and mechanism None when V is 0, for they are not asked) or missing (the judge gave no
    readable reply after its re-ask, or its call failed: counted apart, never a 0)."""

    status: Literal["scored", "missing"]
    rollout_call: str = ""  # the call key of the rollout scored ('' for a row from before that names none)
    validity: int | None = None
    failure: str | None = None
    gate: float | None = None
    mechanism: float | None = None
    score: float | None = None
    reason: str = ""
    evidence: dict[str, str] = {}
    call_keys: list[str] = []
    run_id: str = ""


class AnswerVerdict(Judged):
    """An LLM answer judge on one Generation or Execution answer: ``correct``, ``incorrect``, or
    ``missing`` (no readable reply after its re-ask, or its call failed), kept apart from the grader's."""

    verdict: Literal["correct", "incorrect", "missing"]
    rollout_call: str = ""  # the call key of the rollout judged ('' for a row from before that names none)
    extracted: str | None = None
    reason: str = ""
    call_keys: list[str] = []
    run_id: str = ""


_ANSWER_COLUMNS = ("student", "source", "pid", "target", "k", "judge", "verdict", "extracted", "reason", "call_keys",
                   "run_id", "rollout_call")
_PUT_ANSWER = (f"INSERT OR REPLACE INTO prim_answer_verdicts ({', '.join(_ANSWER_COLUMNS)}, created_at) "
               f"VALUES ({', '.join('?' * (len(_ANSWER_COLUMNS) + 1))})")
_SCORE_COLUMNS = ("student", "source", "pid", "target", "k", "judge", "status", "validity", "failure", "gate",
                  "mechanism", "score", "reason", "evidence", "call_keys", "run_id", "rollout_call")
_PUT_SCORE = (f"INSERT OR REPLACE INTO prim_scores ({', '.join(_SCORE_COLUMNS)}, created_at) "
              f"VALUES ({', '.join('?' * (len(_SCORE_COLUMNS) + 1))})")


class PrimitivesTable(Core):
    async def put_primitive(self, primitive: PrimPrimitive, *, wait: bool = True) -> None:
        """Store a primitive under (pid, provenance, author), replacing the one there."""
        await self._submit(_PUT, (primitive.pid, primitive.provenance, primitive.author, primitive.family,
                                  primitive.model_dump_json(), now()), wait)

    async def primitives(self, pid: str | None = None, provenance: str | None = None,
                         author: str | None = None) -> list[PrimPrimitive]:
        """Stored primitives, filtered by any of pid, provenance, author; in insertion order."""
        sql, params = where({"pid": pid, "provenance": provenance, "author": author})
        rows = await self._fetch(f"SELECT primitive FROM primitives{sql} ORDER BY rowid", params)
        return [PrimPrimitive.model_validate_json(r["primitive"]) for r in rows]

    async def put_solution(self, pid: str, solution: str, *, wait: bool = True) -> None:
        await self._submit(_PUT_SOLUTION, (pid, solution, now()), wait)

    async def solutions(self) -> dict[str, str]:
        """Each problem's reference solution, by pid."""
        return {r["pid"]: r["solution"] for r in await self._fetch("SELECT pid, solution FROM prim_solutions")}

    async def put_plan(self, pid: str, author: str, steps: list[str], *, wait: bool = True) -> None:
        """A teacher's plan of a problem, replacing that teacher's earlier one."""
        await self._submit("INSERT OR REPLACE INTO prim_plans (pid, author, steps, created_at) VALUES (?, ?, ?, ?)",
                           (pid, author, to_json(steps), now()), wait)

    async def plans(self, author: str | None = None) -> dict[str, list[str]]:
        """Each problem's plan by pid (of ``author``, or the last stored of any)."""
        sql, params = where({"author": author})
        rows = await self._fetch(f"SELECT pid, steps FROM prim_plans{sql} ORDER BY rowid", params)
        return {r["pid"]: json.loads(r["steps"]) for r in rows}

    async def put_prim_score(self, s: PrimScore, *, wait: bool = True) -> None:
        row: dict[str, Any] = {**s.model_dump(), "evidence": to_json(s.evidence), "call_keys": to_json(s.call_keys)}
        await self._submit(_PUT_SCORE, (*(row[c] for c in _SCORE_COLUMNS), now()), wait)

    async def put_answer_verdict(self, v: AnswerVerdict, *, wait: bool = True) -> None:
        row: dict[str, Any] = {**v.model_dump(), "call_keys": to_json(v.call_keys)}
        await self._submit(_PUT_ANSWER, (*(row[c] for c in _ANSWER_COLUMNS), now()), wait)

    async def answer_verdicts(self, student: str | None = None, judge: str | None = None,
                              source: str | None = None) -> list[AnswerVerdict]:
        sql, params = where({"student": student, "judge": judge, "source": source})
        rows = await self._fetch(f"SELECT {', '.join(_ANSWER_COLUMNS)} FROM prim_answer_verdicts{sql} ORDER BY rowid",
                                 params)
        return [AnswerVerdict(**{**dict(r), "call_keys": json.loads(r["call_keys"])}) for r in rows]

    async def prim_scores(self, student: str | None = None, judge: str | None = None,
                          source: str | None = None) -> list[PrimScore]:
        sql, params = where({"student": student, "judge": judge, "source": source})
        rows = await self._fetch(f"SELECT {', '.join(_SCORE_COLUMNS)} FROM prim_scores{sql} ORDER BY rowid", params)
        return [PrimScore(**{**dict(r), "evidence": json.loads(r["evidence"]), "call_keys": json.loads(r["call_keys"])})
                for r in rows]
