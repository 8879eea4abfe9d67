"""The compile loop's workers: bounded async workers over the problems, and the failed check of an
attempt that ends a problem without a result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from ..clients import BudgetReached, ProviderError, StructuredOutputError
from ..runtime import frozen_heap
from ..schemas import CheckResult
from ..workers import TaskFailed

P = TypeVar("P")
R = TypeVar("R")


def failure(check: str, what: str, exc: BaseException) -> CheckResult:
    """A failed check whose reason is the exception, on one line, bounded."""
    text = " ".join(str(exc).split()) or "(no message)"
    return CheckResult(check=check, passed=False, reason=f"{what}: {type(exc).__name__}: {text}"[:2000])


# an attempt ended by the infrastructure, not by the plan: the provider (outage, refused request) or
# the grader (a check or a grading in the worker pool gave no result: its limit passed, a worker died)
PROVIDER_CHECK = "provider"
GRADER_CHECK = "grader"
BUDGET_CHECK = "budget"  # --max-cost stopped the run before the problem was done


class Outcome:
    """What a compile outcome says of its failures (a dataclass with ``errors``)."""

    errors: list[CheckResult]

    @property
    def infrastructure_failure(self) -> bool:
        """Ended by the provider or the grader, not by the plan: a rerun compiles the problem again."""
        return any(e.check in (PROVIDER_CHECK, GRADER_CHECK, BUDGET_CHECK) for e in self.errors)


def infrastructure_failure(what: str, exc: BaseException) -> CheckResult | None:
    """The failed check of an attempt that a provider error or a failed grading ended (the chain of
    causes is searched: a check may wrap the error it met), or None if neither is
    behind ``exc``. Such a failure says nothing about the plan: it is never shown to the teacher,
    and a rerun compiles the problem again (failed calls are not cached)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, BudgetReached):
            return failure(BUDGET_CHECK, what, cause)
        if isinstance(cause, ProviderError):
            return failure(PROVIDER_CHECK, what, cause)
        if isinstance(cause, TaskFailed):  # verify.GradingFailed among them
            return failure(GRADER_CHECK, what, cause)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def teacher_failure(exc: BaseException, max_tokens: int) -> CheckResult:
    """The teacher gave no usable answer; one cut off by its token budget says which and what to do.
    A provider error behind it is a provider failure, not the teacher's."""
    what = "teacher call failed"
    if isinstance(exc, StructuredOutputError) and exc.truncated:
        what += f" (its answer was cut off at --max-tokens {max_tokens}: raise it)"
    return infrastructure_failure(what, exc) or failure("teacher", what, exc)


async def compile_all(
    problems: Sequence[P],
    compile_one: Callable[[P], Awaitable[R]],
    failed: Callable[[P, CheckResult], R],
    *,
    concurrency: int,
    on_done: Callable[[R], None] | None = None,
    stopped: Callable[[], str | None] = lambda: None,
) -> list[R]:
    """Run ``compile_one`` on every problem, ``concurrency`` at a time; a problem that raises ends as
    ``failed(problem, reason)`` and the run goes on. Once ``stopped()`` gives a reason (the client's
    budget is reached), the problems not yet started end as budget failures, nothing stored. The
    collector is kept off the libraries' objects meanwhile (see ``runtime.frozen_heap``)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(problem: P) -> R:
        async with gate:
            reason = stopped()
            if reason is not None:
                outcome = failed(problem, CheckResult(check=BUDGET_CHECK, passed=False, reason=reason))
            else:
                try:
                    outcome = await compile_one(problem)
                except Exception as exc:  # noqa: BLE001 - e.g. the store refused the attempt: report, go on
                    what = "compiling the problem failed"
                    check = "teacher" if isinstance(exc, StructuredOutputError) else "compiler"
                    outcome = failed(problem, infrastructure_failure(what, exc) or failure(check, what, exc))
        if on_done:
            on_done(outcome)
        return outcome

    with frozen_heap():
        return list(await asyncio.gather(*(one(p) for p in problems)))
