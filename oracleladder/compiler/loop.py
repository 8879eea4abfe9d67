"""Algorithm 1: compile one problem into a validated family, re-asking the teacher on errors.

Every attempt (its plan and its validator errors) is stored, so a failed problem can be read
afterwards, and a resumed run replays cached teacher calls instead of paying for them again. A
teacher answer that yields no plan (retries spent, output cut off at max_tokens, not the schema),
or a plan the checks cannot digest, is stored as a failed attempt with the reason; the problem ends
failed and the run goes on. A provider error (on the teacher call or an independent-solve call),
or an independent solve the grader could not grade, ends the attempt as an infrastructure failure
(check "provider" or "grader"): stored with its reason, never shown to the teacher (the plan was
not at fault), and compiled again by a rerun, since failed calls are not cached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..clients import Client
from ..probe.prompts import messages as student_messages
from ..verify import GradingFailed, VerifierPool
from ..prompts import load
from ..runtime import jobs_in_flight
from ..schemas import CheckResult, Family, FamilyReport, MathProblem, Provenance
from ..store import Store
from ..validators import answer_problem, independent_solve_check, render_errors
from ..validators.reference import CHECK as REFERENCE_CHECK
from .plan import Granularity, TeacherPlan, plan_errors, teacher_messages, to_family
from .workers import (Outcome, compile_all, failure, infrastructure_failure, store_failed_attempt,
                      teacher_failure)


@dataclass
class CompileOutcome(Outcome):
    pid: str
    family: Family | None
    attempts: int
    errors: list[CheckResult] = field(default_factory=list)  # the last attempt's failures

    @property
    def ok(self) -> bool:
        return self.family is not None


@dataclass
class Compiler:
    """One teacher, one store, one verifier pool: compiles problems with the retry-on-error loop."""

    client: Client
    store: Store
    pool: VerifierPool
    granularity: Granularity = "default"
    max_attempts: int = 3
    independent_solve: bool = True
    max_tokens: int = 4096  # a plan is long JSON; a provider's small default would truncate it

    @property
    def source(self) -> str:
        return self.client.name

    async def _solve_alone(self, family: Family, attempt: int) -> list[CheckResult]:
        """T.solve(M_i): the teacher answers each milestone from its student-facing prompt only."""

        async def solve(prompt: str) -> str:
            request = self.client.request(student_messages(prompt), k=attempt, temperature=0.0,
                                          max_tokens=self.max_tokens)
            return (await self.client.complete(request)).text

        async def grade(response: str, gold: str):
            verdict = await self.pool.verify(response, gold)
            if not verdict.graded:  # a broken grader says nothing about the milestone: end the attempt
                raise GradingFailed(verdict.reason)
            return verdict

        return list(await asyncio.gather(
            *(independent_solve_check(m, solve, grade, index=i) for i, m in family.tested())
        ))

    async def _failed(self, problem: MathProblem, attempt: int, plan: TeacherPlan | None,
                      error: CheckResult) -> CompileOutcome:
        await store_failed_attempt(self.store, problem.pid, self.source, attempt,
                                   None if plan is None else plan.model_dump(mode="json"), error, self.granularity)
        return CompileOutcome(problem.pid, None, attempt + 1, [error])

    async def compile(self, problem: MathProblem) -> CompileOutcome:
        await self.store.put_problem(problem)
        unusable = answer_problem(problem.answer)
        if unusable:  # no roadmap can be graded against it: skip before the teacher is paid
            return await self._failed(problem, 0, None, CheckResult(check=REFERENCE_CHECK, passed=False, reason=unusable))
        messages, version = teacher_messages(problem, self.granularity)
        errors: list[CheckResult] = []
        for attempt in range(self.max_attempts):
            request = self.client.request(messages, temperature=0.0, max_tokens=self.max_tokens)
            try:
                plan = await self.client.structured(request, TeacherPlan)
            except Exception as exc:  # noqa: BLE001 - no usable plan (retries spent, truncated, unparsable):
                # nothing to re-ask about, and the same request gets the same cached answer; record, stop
                return await self._failed(problem, attempt, None, teacher_failure(exc, self.max_tokens))
            provenance = Provenance(source=self.source, prompt_hash=version, granularity=self.granularity,
                                    attempts=attempt + 1)
            stage = "checking the plan failed"
            try:
                family = to_family(plan, problem, provenance)
                errors = plan_errors(plan) or (await self.pool.check_family(family, parse_prose=False)).failures()
                if not errors and self.independent_solve:
                    stage = "independent solve failed"
                    errors = [c for c in await self._solve_alone(family, attempt) if not c.passed]
            except Exception as exc:  # noqa: BLE001 - a plan the checks cannot digest fails, it never stops the run;
                # a call the provider failed, or a check or solve the grader could not finish, ends the attempt as
                # an infrastructure failure, never shown to the teacher
                error = infrastructure_failure(stage, exc) or failure("compiler", stage, exc)
                return await self._failed(problem, attempt, plan, error)
            await self.store.put_compile_attempt(
                problem.pid, self.source, attempt, plan=plan.model_dump(mode="json"),
                errors=[e.model_dump(mode="json") for e in errors], passed=not errors,
                granularity=self.granularity,
            )
            if not errors:
                await self.store.put_family(family)
                return CompileOutcome(problem.pid, family, attempt + 1)
            report = FamilyReport(pid=problem.pid, checks=errors)
            messages = [
                *messages,
                {"role": "assistant", "content": plan.model_dump_json()},
                {"role": "user", "content": load("teacher_retry").render(errors=render_errors(report, family))},
            ]
        return CompileOutcome(problem.pid, None, self.max_attempts, errors)

    async def compile_all(
        self,
        problems: Sequence[MathProblem],
        *,
        concurrency: int | None = None,
        on_done: Callable[[CompileOutcome], None] | None = None,
    ) -> list[CompileOutcome]:
        """Compile every problem, ``concurrency`` at a time (default: ``JOBS_PER_SLOT`` per client
        slot); a failing problem never stops the run."""
        return await compile_all(problems, self.compile, lambda p, e: CompileOutcome(p.pid, None, 0, [e]),
                                 concurrency=jobs_in_flight(self.client.concurrency, concurrency),
                                 on_done=on_done, stopped=lambda: self.client.budget_stop)
