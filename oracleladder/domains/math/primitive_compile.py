"""`ladder compile --primitives-only`: a teacher writes the primitive of families that have a roadmap
but no primitive (the released ones), in the one compile loop (`compiler.loop.Compiler`).

The loop's item is the stored family itself. The teacher sees the problem, its reference answer and
its roadmap with the golds, and returns one primitive; the validators of validators/primitive.py
(run in the worker pool, like a plan's checks) send their errors back in a re-ask, up to
``max_attempts``. Every attempt is stored (``Store.put_primitive_attempt``) with its errors or the
reason it ended; an accepted primitive is written onto the family (same pid, source and
granularity), marked ``teacher-primitives-only``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ...ladder.contract import Attempt, Checked, CompileDomain
from ...prompts import load
from ...schemas import CheckResult, Family, FamilyReport, Milestone, Primitive
from ...store import Store
from ...validators import check_family_in
from ...validators.primitive import CHECKS
from ...workers import WorkerPool
from .prompts import description, roadmap_text


class PrimitivePlan(BaseModel):
    primitive: str = Field(description="one short sentence: the key idea the solution turns on, no value")


def part_messages(prompt: str, problem: str, family: Family,
                  roadmap: Sequence[Milestone]) -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages asking a teacher for a part of ``family`` (the system prompt ``prompt``,
    then ``prompt``_user with ``problem``, the reference answer and ``roadmap`` with its golds), and the
    prompt version (hash of both templates)."""
    user = load(f"{prompt}_user").render(
        problem=problem, answer=family.parent_answer,
        roadmap=roadmap_text([description(m) for m in roadmap], [m.answer for m in roadmap]))
    version = "-".join(load(n).version for n in (prompt, f"{prompt}_user"))
    return [{"role": "system", "content": load(prompt).text}, {"role": "user", "content": user}], version


def primitive_messages(family: Family) -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages for ``family`` and the prompt version."""
    return part_messages("teacher_primitive", family.parent_prompt.strip(), family, [m for _, m in family.tested()])


def render_primitive_errors(errors: Sequence[CheckResult]) -> str:
    return "\n".join(f"- [{e.check}]: {e.reason}" for e in errors)


R = TypeVar("R", bound=BaseModel)


class FamilyPartDomain(CompileDomain[Family, Family, R]):
    """Stored families given one part by a teacher, checked in ``pool``; an accepted family is written
    over its stored self. Not a `--domain`: it compiles only, and the families it writes are probed by
    the math domain."""

    uses_pool = True
    checks: Collection[str]  # the part's checks: the family's own run too, but only these are an attempt's
    retry: str  # the prompt that re-asks with an attempt's errors

    def __init__(self, pool: WorkerPool | None = None) -> None:
        self.pool = pool

    async def checked(self, candidate: Family) -> Checked[Family]:
        """``candidate`` (the stored family given the reply's part) checked in the worker pool."""
        report = await check_family_in(self.worker_pool(), candidate, parse_prose=False)
        return Checked(candidate, FamilyReport(pid=candidate.pid,
                                               checks=[c for c in report.checks if c.check in self.checks]))

    def reask(self, checked: Checked[Family]) -> str:
        return load(self.retry).render(errors=render_primitive_errors(checked.errors))

    async def keep(self, store: Store, checked: Checked[Family], source: str, *, attempt: int,
                   version: str) -> None:
        if not checked.errors:
            await store.put_family(checked.family)

    async def store_problem(self, store: Store, problem: Family) -> None:
        return None  # the family is its roadmap set's, stored already


class PrimitiveDomain(FamilyPartDomain[PrimitivePlan]):
    """Existing families given a primitive."""

    response_model = PrimitivePlan
    check_stage = "checking the primitive"
    checks = CHECKS
    retry = "teacher_primitive_retry"

    def teacher_messages(self, problem: Family) -> tuple[list[dict[str, str]], str]:
        return primitive_messages(problem)

    async def check(self, reply: PrimitivePlan, problem: Family, attempt: Attempt) -> Checked[Family]:
        return await self.checked(problem.model_copy(update={"primitive": Primitive(
            text=self.stored_plan(reply, attempt.version), provenance="teacher-primitives-only",
            teacher=attempt.source, prompt_hash=attempt.version)}))

    def stored_plan(self, reply: PrimitivePlan, version: str) -> str:
        return reply.primitive.strip()

    async def store_attempt(self, store: Store, problem: Family, source: str, attempt: int, *, plan: Any,
                            errors: list[dict[str, Any]], passed: bool) -> None:
        await store.put_primitive_attempt(problem, source, attempt, primitive=plan, errors=errors, passed=passed)


__all__ = ["FamilyPartDomain", "PrimitiveDomain", "PrimitivePlan", "part_messages", "primitive_messages"]
