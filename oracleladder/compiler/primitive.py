"""`ladder compile --primitives-only`: a teacher writes the primitive of families that have a roadmap
but no primitive (the released ones), through the same retry-on-error loop as a roadmap.

The teacher sees the problem, its reference answer and its roadmap with the golds, and returns one
primitive; the validators of validators/primitive.py (run in the verifier pool, like a plan's checks)
send their errors back in a re-ask, up to ``max_attempts``. Every attempt is stored
(``Store.put_primitive_attempt``) with its errors or the reason it ended; an accepted primitive is
written onto the family (same pid, source and granularity), marked ``teacher-primitives-only``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..clients import Client
from ..probe.prompts import _roadmap, description
from ..prompts import load
from ..runtime import jobs_in_flight
from ..schemas import CheckResult, Family, Primitive
from ..store import Store
from ..validators.primitive import CHECKS
from ..verify import VerifierPool
from .workers import Outcome, compile_all, failure, infrastructure_failure, teacher_failure

PROMPTS = ("teacher_primitive", "teacher_primitive_user")


class PrimitivePlan(BaseModel):
    primitive: str = Field(description="one short sentence: the key idea the solution turns on, no value")


def primitive_messages(family: Family) -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages for ``family`` and the prompt version (hash of both templates)."""
    tested = [m for _, m in family.tested()]
    user = load("teacher_primitive_user").render(
        problem=family.parent_prompt.strip(), answer=family.parent_answer,
        roadmap=_roadmap([description(m) for m in tested], [m.answer for m in tested]))
    version = "-".join(load(n).version for n in PROMPTS)
    return [{"role": "system", "content": load("teacher_primitive").text}, {"role": "user", "content": user}], version


def render_primitive_errors(errors: Sequence[CheckResult]) -> str:
    return "\n".join(f"- [{e.check}]: {e.reason}" for e in errors)


@dataclass
class PrimitiveOutcome(Outcome):
    pid: str
    family: Family | None  # the family with its new primitive, when one passed
    attempts: int
    errors: list[CheckResult] = field(default_factory=list)  # the last attempt's failures

    @property
    def ok(self) -> bool:
        return self.family is not None


@dataclass
class PrimitiveCompiler:
    """One teacher, one store, one verifier pool: writes primitives onto existing families."""

    client: Client
    store: Store
    pool: VerifierPool
    max_attempts: int = 3
    max_tokens: int = 4096

    async def _ended(self, family: Family, attempt: int, text: str | None, error: CheckResult) -> PrimitiveOutcome:
        await self.store.put_primitive_attempt(family, self.client.name, attempt, primitive=text,
                                               errors=[error.model_dump(mode="json")], passed=False)
        return PrimitiveOutcome(family.pid, None, attempt + 1, [error])

    async def compile(self, family: Family) -> PrimitiveOutcome:
        messages, version = primitive_messages(family)
        errors: list[CheckResult] = []
        for attempt in range(self.max_attempts):
            request = self.client.request(messages, temperature=0.0, max_tokens=self.max_tokens)
            try:
                plan = await self.client.structured(request, PrimitivePlan)
            except Exception as exc:  # noqa: BLE001 - no usable answer: record why, stop (a re-ask gets the cache)
                return await self._ended(family, attempt, None, teacher_failure(exc, self.max_tokens))
            text = plan.primitive.strip()
            candidate = family.model_copy(update={"primitive": Primitive(
                text=text, provenance="teacher-primitives-only", teacher=self.client.name, prompt_hash=version)})
            try:  # the family's own checks run too; only the primitive's are this attempt's
                report = await self.pool.check_family(candidate, parse_prose=False)
            except Exception as exc:  # noqa: BLE001 - a check the grader could not finish says nothing of the text
                error = infrastructure_failure("checking the primitive failed", exc) or failure(
                    "compiler", "checking the primitive failed", exc)
                return await self._ended(family, attempt, text, error)
            errors = [c for c in report.failures() if c.check in CHECKS]
            await self.store.put_primitive_attempt(family, self.client.name, attempt, primitive=text,
                                                   errors=[e.model_dump(mode="json") for e in errors],
                                                   passed=not errors)
            if not errors:
                await self.store.put_family(candidate)
                return PrimitiveOutcome(family.pid, candidate, attempt + 1)
            messages = [
                *messages,
                {"role": "assistant", "content": plan.model_dump_json()},
                {"role": "user", "content": load("teacher_primitive_retry").render(
                    errors=render_primitive_errors(errors))},
            ]
        return PrimitiveOutcome(family.pid, None, self.max_attempts, errors)

    async def compile_all(self, families: Sequence[Family], *, concurrency: int | None = None,
                          on_done: Callable[[PrimitiveOutcome], None] | None = None) -> list[PrimitiveOutcome]:
        """A primitive for every family, ``concurrency`` at a time; a failing family never stops the run."""
        return await compile_all(families, self.compile, lambda f, e: PrimitiveOutcome(f.pid, None, 0, [e]),
                                 concurrency=jobs_in_flight(self.client.concurrency, concurrency),
                                 on_done=on_done, stopped=lambda: self.client.budget_stop)
