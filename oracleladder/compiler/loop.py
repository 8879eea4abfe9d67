"""Algorithm 1: compile one problem into a validated family, re-asking the teacher on errors, for any
domain (`domains.CompileDomain`: the messages, the reply's model, its checks, the re-ask text, and
what is stored), including the primitive of an existing family (`domains.primitive`).

This loop is the only re-ask loop: each teacher call is one attempt (one structured call is one
model call), stored with its plan and errors, so a failed problem can be read afterwards, and a
resumed run replays cached teacher calls instead of paying for them again. A reply that is not a valid
plan (not JSON, not the schema) is a failed attempt, re-asked with the reply and its validation
errors in the structured mode's own shape (``StructuredOutputError.reask``). A reply cut off at its
token budget is asked again once at twice the budget while attempts remain (the cut-off attempt stored,
and counted in ``budget_raised``). A teacher answer that yields nothing to re-ask about (cut off again,
or a reply the client could not read), or a plan the checks cannot digest, is stored as a failed
attempt with the reason; the problem ends failed and the run goes on. A provider error (on the teacher call or a
confirming call), or a check the grader could not finish, ends the attempt as an infrastructure failure
(check "provider" or "grader"): stored with its reason, never shown to the teacher (the plan was not at
fault), and compiled again by a rerun, since failed calls are not cached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..clients import Client, StructuredOutputError
from ..ladder.contract import Attempt, CompileDomain
from ..runtime import jobs_in_flight
from ..schemas import CheckResult
from ..store import Store
from .workers import Outcome, compile_all, failure, infrastructure_failure, teacher_failure


@dataclass
class CompileOutcome(Outcome):
    pid: str
    family: Any  # the accepted family (the domain's type), or None
    attempts: int
    errors: list[CheckResult] = field(default_factory=list)  # the last attempt's failures
    budget_raised: bool = False  # a reply cut off at the token budget was asked again at twice it

    @property
    def ok(self) -> bool:
        return self.family is not None


def cut_off(exc: BaseException) -> bool:
    """Whether ``exc`` is a teacher reply cut off by its token budget."""
    return isinstance(exc, StructuredOutputError) and exc.truncated


def invalid_reply(exc: BaseException) -> StructuredOutputError | None:
    """``exc``, when it says the teacher's reply is not a valid plan; None for anything else (a
    provider error, a reply cut off by its token budget)."""
    if not isinstance(exc, StructuredOutputError) or cut_off(exc):
        return None
    return exc


@dataclass
class Compiler:
    """One teacher, one store, one domain: compiles problems with the retry-on-error loop."""

    client: Client
    store: Store
    domain: CompileDomain
    max_attempts: int = 3
    max_tokens: int = 4096  # a plan is long JSON; a provider's small default would truncate it

    @property
    def source(self) -> str:
        return self.client.name

    async def _stored(self, problem: BaseModel, attempt: int, plan: Any, errors: list[CheckResult]) -> None:
        await self.domain.store_attempt(self.store, problem, self.source, attempt, plan=plan,
                                        errors=[e.model_dump(mode="json") for e in errors], passed=not errors)

    async def _failed(self, problem: BaseModel, attempt: int, plan: Any, error: CheckResult, *,
                      budget_raised: bool = False) -> CompileOutcome:
        await self._stored(problem, attempt, plan, [error])
        return CompileOutcome(problem.pid, None, attempt + 1, [error],  # type: ignore[attr-defined]
                              budget_raised=budget_raised)

    async def compile(self, problem: BaseModel) -> CompileOutcome:
        domain, pid = self.domain, problem.pid  # type: ignore[attr-defined]
        await domain.store_problem(self.store, problem)
        unusable = domain.unusable(problem)
        if unusable:  # no plan can be checked against it: skip before the teacher is paid
            return await self._failed(problem, 0, None, unusable)
        messages, version = domain.teacher_messages(problem)
        errors: list[CheckResult] = []
        budget, raised = self.max_tokens, False
        for index in range(self.max_attempts):
            request = self.client.request(messages, temperature=0.0, max_tokens=budget)
            try:
                reply = await self.client.structured(request, domain.response_model)
            except Exception as exc:  # noqa: BLE001 - no plan: a reply to re-ask about, else nothing to re-ask
                if cut_off(exc) and not raised and index + 1 < self.max_attempts:
                    raised = True  # once: a plan that needs more than twice the budget is a budget to raise
                    await self._stored(problem, index, None, [CheckResult(
                        check="teacher", passed=False,
                        reason=f"the reply was cut off at --max-tokens {budget}; asked again at {2 * budget}")])
                    budget *= 2
                    continue
                invalid = invalid_reply(exc)
                if invalid is None:  # cut off, or a provider failure: the same request gets the same answer
                    return await self._failed(problem, index, None, teacher_failure(exc, budget), budget_raised=raised)
                errors = [CheckResult(check="teacher", passed=False, reason=f"the reply is not a valid "
                                      f"{domain.response_model.__name__}: {invalid.describe()}"[:2000])]
                await self._stored(problem, index, None, errors)
                messages = [*messages, *invalid.reask()]  # in the mode's own shape (instructor's)
                continue
            attempt = Attempt(index=index, source=self.source, version=version, client=self.client,
                              max_tokens=budget)
            stage = f"{domain.check_stage} failed"
            try:
                checked = await domain.check(reply, problem, attempt)
                if not checked.errors:
                    stage = f"{domain.confirm_stage} failed"
                    checked = await domain.confirm(checked, problem, attempt)
            except Exception as exc:  # noqa: BLE001 - a plan the checks cannot digest fails, it never stops the run;
                # a call the provider failed, or a check the grader could not finish, ends the attempt as
                # an infrastructure failure, never shown to the teacher
                error = infrastructure_failure(stage, exc) or failure("compiler", stage, exc)
                return await self._failed(problem, index, domain.stored_plan(reply, version), error,
                                          budget_raised=raised)
            errors = checked.errors
            await domain.keep(self.store, checked, self.source, attempt=index, version=version)
            await self._stored(problem, index, domain.stored_plan(reply, version), errors)
            if not errors:
                return CompileOutcome(pid, checked.family, index + 1, budget_raised=raised)
            messages = [
                *messages,
                {"role": "assistant", "content": reply.model_dump_json()},
                {"role": "user", "content": domain.reask(checked)},
            ]
        return CompileOutcome(pid, None, self.max_attempts, errors, budget_raised=raised)

    async def compile_all(
        self,
        problems: Sequence[BaseModel],
        *,
        concurrency: int | None = None,
        on_done: Callable[[CompileOutcome], None] | None = None,
    ) -> list[CompileOutcome]:
        """Compile every problem, ``concurrency`` at a time (default: ``JOBS_PER_SLOT`` per client
        slot); a failing problem never stops the run."""
        return await compile_all(problems, self.compile,
                                 lambda p, e: CompileOutcome(p.pid, None, 0, [e]),  # type: ignore[attr-defined]
                                 concurrency=jobs_in_flight(self.client.concurrency, concurrency),
                                 on_done=on_done, stopped=lambda: self.client.budget_stop)
