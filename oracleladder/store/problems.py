"""``problems``: the parent problems, math or code, as given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ..schemas.models import CodeProblem, MathProblem
from .core import Core
from .rows import now, where

_PUT = """
INSERT INTO problems (pid, kind, data, created_at) VALUES (?, ?, ?, ?)
ON CONFLICT(pid) DO UPDATE SET kind = excluded.kind, data = excluded.data
"""


class ProblemsTable(Core):
    async def put_problem(self, problem: MathProblem | CodeProblem, *, wait: bool = True) -> None:
        kind = "code" if isinstance(problem, CodeProblem) else "math"
        await self._submit(_PUT, (problem.pid, kind, problem.model_dump_json(), now()), wait)

    async def put_problems(self, problems: Iterable[MathProblem | CodeProblem]) -> int:
        """Queue many problems and wait once; returns how many."""
        n = 0
        for p in problems:
            await self.put_problem(p, wait=False)
            n += 1
        await self.flush()
        return n

    async def get_problem(self, pid: str) -> MathProblem | CodeProblem | None:
        rows = await self._fetch("SELECT kind, data FROM problems WHERE pid = ?", (pid,))
        return _problem(rows[0]) if rows else None

    async def problems(self, kind: Literal["math", "code"] | None = None) -> list[MathProblem | CodeProblem]:
        sql, params = where({"kind": kind})
        return [_problem(r) for r in await self._fetch("SELECT kind, data FROM problems" + sql + " ORDER BY rowid",
                                                       params)]


def _problem(r: Any) -> MathProblem | CodeProblem:
    return (CodeProblem if r["kind"] == "code" else MathProblem).model_validate_json(r["data"])
