"""``compile_attempts``, ``primitive_attempts`` and ``integrate_attempts``: every teacher attempt at a
roadmap, a packet, a family's primitive or its INTEGRATE step, with the errors it got."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ..schemas.models import Family
from .core import Core
from .rows import gran, now, to_json, where


class CompileAttempt(BaseModel):
    """One teacher attempt at compiling a family, with the validator errors it got."""

    pid: str
    source: str
    granularity: str | None = None
    attempt: int
    plan: Any = None
    errors: list[Any]
    passed: bool
    created_at: str


class FamilyPartAttempt(BaseModel):
    """One teacher attempt at a part of a stored family, with the validator errors it got."""

    pid: str
    source: str  # the roadmap set of the family
    granularity: str | None = None
    teacher: str
    attempt: int
    errors: list[Any]
    passed: bool
    created_at: str


class PrimitiveAttempt(FamilyPartAttempt):
    """One teacher attempt at a family's primitive (`ladder compile --primitives-only`)."""

    primitive: str | None = None  # None when the teacher gave no usable answer


class IntegrateAttempt(FamilyPartAttempt):
    """One teacher attempt at a family's INTEGRATE step (`ladder compile --integrate-only`)."""

    plan: Any = None  # the step as the teacher wrote it; None when it gave no usable answer


_PUT_INTEGRATE = """
INSERT OR REPLACE INTO integrate_attempts
    (pid, source, granularity, teacher, attempt, plan, errors, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_PUT_PRIMITIVE = """
INSERT OR REPLACE INTO primitive_attempts
    (pid, source, granularity, teacher, attempt, primitive, errors, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_PUT = """
INSERT OR REPLACE INTO compile_attempts
    (pid, source, granularity, attempt, plan, errors, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""


class AttemptsTable(Core):
    async def put_compile_attempt(self, pid: str, source: str, attempt: int, *, plan: Any,
                                  errors: Sequence[Any], passed: bool,
                                  granularity: str | None = None, wait: bool = True) -> None:
        """One teacher attempt (index ``attempt``) for (pid, source, granularity): the plan the
        teacher returned (a model, dict or None) and the validator errors it got."""
        params = (pid, source, gran(granularity), int(attempt),
                  None if plan is None else to_json(plan), to_json(list(errors)), int(bool(passed)),
                  now())
        await self._submit(_PUT, params, wait)

    async def compile_attempts(self, pid: str | None, source: str,
                               granularity: str | None = None) -> list[CompileAttempt]:
        """Attempts in order; ``pid=None`` returns those of every problem, ``granularity=None`` those
        of every granularity."""
        sql, params = where({"pid": pid, "source": source, "granularity": granularity})
        rows = await self._fetch("SELECT pid, source, granularity, attempt, plan, errors, passed, created_at "
                                 f"FROM compile_attempts{sql} ORDER BY pid, granularity, attempt", params)
        return [
            CompileAttempt(pid=r["pid"], source=r["source"], granularity=r["granularity"] or None,
                           attempt=r["attempt"], plan=None if r["plan"] is None else json.loads(r["plan"]),
                           errors=json.loads(r["errors"]), passed=bool(r["passed"]), created_at=r["created_at"])
            for r in rows
        ]

    async def put_primitive_attempt(self, family: Family, teacher: str, attempt: int, *, primitive: str | None,
                                    errors: Sequence[Any], passed: bool, wait: bool = True) -> None:
        """One teacher attempt at ``family``'s primitive, with the validator errors it got."""
        params = (family.pid, family.provenance.source, gran(family.provenance.granularity), teacher,
                  int(attempt), primitive, to_json(list(errors)), int(bool(passed)), now())
        await self._submit(_PUT_PRIMITIVE, params, wait)

    async def put_integrate_attempt(self, family: Family, teacher: str, attempt: int, *, plan: Any,
                                    errors: Sequence[Any], passed: bool, wait: bool = True) -> None:
        """One teacher attempt at ``family``'s INTEGRATE step, with the validator errors it got."""
        params = (family.pid, family.provenance.source, gran(family.provenance.granularity), teacher,
                  int(attempt), None if plan is None else to_json(plan), to_json(list(errors)),
                  int(bool(passed)), now())
        await self._submit(_PUT_INTEGRATE, params, wait)

    async def integrate_attempts(self, pid: str | None = None) -> list[IntegrateAttempt]:
        """INTEGRATE attempts (of one pid, or all) in order."""
        sql, params = where({"pid": pid})
        rows = await self._fetch("SELECT pid, source, granularity, teacher, attempt, plan, errors, passed, "
                                 f"created_at FROM integrate_attempts{sql} ORDER BY rowid", params)
        return [IntegrateAttempt(pid=r["pid"], source=r["source"], granularity=r["granularity"] or None,
                                 teacher=r["teacher"], attempt=r["attempt"],
                                 plan=None if r["plan"] is None else json.loads(r["plan"]),
                                 errors=json.loads(r["errors"]), passed=bool(r["passed"]), created_at=r["created_at"])
                for r in rows]

    async def primitive_attempts(self, pid: str | None = None) -> list[PrimitiveAttempt]:
        """Primitive attempts (of one pid, or all) in order."""
        sql, params = where({"pid": pid})
        rows = await self._fetch("SELECT pid, source, granularity, teacher, attempt, primitive, errors, passed, "
                                 f"created_at FROM primitive_attempts{sql} ORDER BY rowid", params)
        return [PrimitiveAttempt(pid=r["pid"], source=r["source"], granularity=r["granularity"] or None,
                                 teacher=r["teacher"], attempt=r["attempt"], primitive=r["primitive"],
                                 errors=json.loads(r["errors"]), passed=bool(r["passed"]), created_at=r["created_at"])
                for r in rows]
