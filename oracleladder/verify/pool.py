"""Grading in a worker pool (`oracleladder.workers`), where SymPy's hangs and crashes cannot reach
the caller: the verifier's task ("verify", registered by this package), and how a grading that gives
no verdict reads as one whose status says so:

* the answer passes its limit: status LIMIT, "timeout" (the release counts these as not accepted);
* the cascade raises on the answer: NOT_ACCEPT, "parse error: <exception>", a grade like any other;
* the worker dies on it twice: status UNGRADED, "grading failed: ..." -- never a verdict on the student;
* the workers cannot start: WorkersUnavailable is raised, with no verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import GradeStatus, Label

from ..workers import TaskFailed, TaskRaised, TaskTimedOut, WorkerDied, WorkerPool
from .graders import exact_match

TASK = "verify"  # oracleladder.verify.core.verify_inprocess, registered by the package


class GradingFailed(TaskFailed):
    """A symbolic check in a worker did not finish (its limit passed, or its worker died)."""


def failed_verdict(e: TaskFailed) -> Verdict:
    """The verdict on an answer whose grading call gave no result."""
    if isinstance(e, TaskTimedOut):
        return Verdict(Label.NOT_ACCEPT, "timeout", None, GradeStatus.LIMIT)
    if isinstance(e, TaskRaised):  # a crash on one input is a verdict, not a dead worker
        return Verdict(Label.NOT_ACCEPT, f"parse error: {e.kind}", None)
    assert isinstance(e, WorkerDied)  # the third way a call gives no result
    return Verdict(Label.NOT_ACCEPT, f"grading failed: the verifier worker died twice ({e.why})", None,
                   GradeStatus.UNGRADED)


async def grade(pool: WorkerPool, response: str, gold: str, *, timeout_s: float | None = None,
                **options: Any) -> Verdict:
    """One response graded in ``pool`` (``options``: grader, note, schema, problem), while other I/O
    goes on. An answer whose last box is the gold (`graders.exact_match`) is accepted here, without the
    round trip to a worker, unless a schema is to be checked."""
    if not options.get("schema"):
        quick = exact_match(response, gold)
        if quick is not None:
            return quick
    try:
        return await pool.run(TASK, dict(response=response, gold=gold, **options), timeout_s)
    except TaskFailed as e:
        return failed_verdict(e)


def grade_sync(pool: WorkerPool, item: Mapping[str, Any], timeout_s: float | None = None) -> Verdict:
    """One item (response, gold and options) graded in a worker of ``pool``, waited for."""
    try:
        return pool.call(TASK, item, timeout_s)
    except TaskFailed as e:
        return failed_verdict(e)


def grade_all(pool: WorkerPool, items: Iterable[Mapping[str, Any]]) -> list[Verdict]:
    """Each item (response, gold and options) graded in a worker of ``pool``, every worker busy."""
    return pool.map(TASK, items, failed_verdict)
