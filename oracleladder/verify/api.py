"""The verifier's public functions: one response (`verify`), many (`verify_many`), two bare
answers (`answers_equivalent`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oracleladder.schemas.types import AnswerSchema

from ..workers import WorkerPool, shared_pool
from .core import Verdict, verify_inprocess
from .equivalence import equivalent
from .graders import grader_name
from .pool import grade_all, grade_sync


def verify(response: str, gold: str, *, grader: str = "strict", extended: bool = False, note: str = "",
           schema: AnswerSchema | None = None, problem: str = "", timeout_s: float = 5.0,
           in_process: bool = False) -> Verdict:
    """Grade one response with `grader` (paper, strict or extended; `extended=True` is a synonym of
    grader="extended"). Runs in the shared worker pool (hard timeout) unless `in_process`.

    The verdict's status says whether it is a grade (GRADED), the answer's own limit (LIMIT) or a
    failed grading (UNGRADED); WorkersUnavailable is raised when no worker can start."""
    kwargs: dict[str, Any] = dict(response=response, gold=gold, grader=grader_name(grader, extended), note=note, schema=schema,
                  problem=problem)
    if in_process:
        return verify_inprocess(**kwargs)
    return grade_sync(shared_pool(), kwargs, timeout_s)


def answers_equivalent(a: str, b: str, *, extended: bool = True) -> bool:
    """The grading equivalence on two bare answers (used by the leak validator), in process."""
    return equivalent(a, b, extended=extended)


def _item(x: Any) -> dict[str, Any]:
    if isinstance(x, dict):
        return {k: x[k] for k in ("response", "gold", "grader", "extended", "note", "schema", "problem") if k in x}
    response, gold = x
    return {"response": response, "gold": gold}


def verify_many(items: Sequence[Any], *, workers: int | None = None, timeout_s: float = 5.0,
                extended: bool | None = None, grader: str | None = None) -> list[Verdict]:
    """Grade many items on every core; `grader` (or `extended`, if given) applies to items that set neither."""
    jobs = [_item(x) for x in items]
    default = grader_name(grader or "strict", bool(extended))
    for j in jobs:
        own = "grader" in j or "extended" in j
        j["grader"] = grader_name(j.get("grader", "strict"), bool(j.pop("extended", False))) if own else default
    with WorkerPool(workers, timeout_s) as pool:
        return grade_all(pool, jobs)
