"""Grading in a worker pool (`oracleladder.workers`), where SymPy's hangs and crashes cannot reach
the caller: the verifier's task ("verify", registered by this package), and how a grading that gives
no verdict reads as one whose status says so:

* the answer passes its limit: status LIMIT, "timeout" (the release counts these as not accepted);
* the cascade raises on the answer: NOT_ACCEPT, "parse error: <exception>", a grade like any other;
* the worker dies on it twice: status UNGRADED, "grading failed: ..." -- never a verdict on the student;
* the workers cannot start: WorkersUnavailable is raised, with no verdict.

A pool's run grades each answer once: a verdict is a function of the grader, the gold, the schema,
the problem and the last boxes (the last one for `paper`, the last six that the compound-answer loop
may read for the others), so an item whose key is one already graded in the same pool gets that
verdict, and identical items in flight wait for the first (the K answers to a prompt often agree).
Only grades are remembered: a timeout or a failed grading is the item's own. The items to one gold
go to one worker (the pool's affinity), whose caches hold that gold's parse and the parser's tables
for its answers; two workers that split them would each pay for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Mapping
from typing import Any
from weakref import WeakKeyDictionary

from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import GradeStatus, Label

from ..workers import TaskFailed, TaskRaised, TaskTimedOut, WorkerDied, WorkerPool
from .extract import BOXES_READ, all_boxed, strip_reasoning
from .graders import GRADERS, QUICK_MAX_CHARS, exact_match
from .normalize import decode_byte_bpe

TASK = "verify"  # oracleladder.verify.core.verify_inprocess, registered by the package

# per pool: its grades by key, and the gradings in flight (each a future of one event loop)
_graded: WeakKeyDictionary[WorkerPool, dict[Hashable, Verdict]] = WeakKeyDictionary()
_in_flight: WeakKeyDictionary[WorkerPool, dict[Hashable, asyncio.Future[Verdict]]] = WeakKeyDictionary()


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


def verdict_key(item: Mapping[str, Any]) -> Hashable | None:
    """What a verdict on ``item`` (response, gold and options) depends on; None where the answer is
    longer than QUICK_MAX_CHARS (read in a worker only) or the grader is unknown (the worker says so)."""
    grader = item.get("grader", "strict")
    if grader not in GRADERS:
        return None
    grader = "extended" if item.get("extended") else grader
    response = item["response"]
    text = strip_reasoning(response if grader == "paper" else decode_byte_bpe(response))
    if len(text) > QUICK_MAX_CHARS:
        return None
    boxes = tuple(all_boxed(text)[-1 if grader == "paper" else -BOXES_READ:])
    return grader, boxes, item["gold"], item.get("schema"), item.get("problem", "")


def _gold(item: Mapping[str, Any]) -> str:
    """An item's affinity in the pool: answers to one gold graded by one worker share its caches."""
    return item["gold"]


def _remember(pool: WorkerPool, key: Hashable | None, verdict: Verdict) -> Verdict:
    if key is not None and verdict.status is GradeStatus.GRADED:
        _graded.setdefault(pool, {})[key] = verdict
    return verdict


async def _run(pool: WorkerPool, item: Mapping[str, Any], timeout_s: float | None) -> Verdict:
    try:
        return await pool.run(TASK, item, timeout_s, affinity=item["gold"])
    except TaskFailed as e:
        return failed_verdict(e)


async def grade(pool: WorkerPool, response: str, gold: str, *, timeout_s: float | None = None,
                **options: Any) -> Verdict:
    """One response graded in ``pool`` (``options``: grader, note, schema, problem), while other I/O
    goes on. An answer whose last box is the gold (`graders.exact_match`) is accepted here, without the
    round trip to a worker, unless a schema is to be checked; one the pool has graded, or is grading,
    gets that grade."""
    if not options.get("schema"):
        quick = exact_match(response, gold)
        if quick is not None:
            return quick
    item = dict(response=response, gold=gold, **options)
    key = verdict_key(item)
    if key is None:
        return await _run(pool, item, timeout_s)
    if key in _graded.get(pool, {}):
        return _graded[pool][key]
    loop, in_flight = asyncio.get_running_loop(), _in_flight.setdefault(pool, {})
    first = in_flight.get(key)
    if first is not None and first.get_loop() is loop:
        try:
            verdict = await asyncio.shield(first)
        except asyncio.CancelledError:
            if not first.cancelled():
                raise  # this call was cancelled, not the first
        else:
            if verdict.status is GradeStatus.GRADED:
                return verdict
        return await _run(pool, item, timeout_s)  # the first gave no grade: this item is tried on its own
    in_flight[key] = done = loop.create_future()
    try:
        done.set_result(_remember(pool, key, await _run(pool, item, timeout_s)))
        return done.result()
    finally:
        done.cancel()  # a no-op once it has its result
        if in_flight.get(key) is done:
            del in_flight[key]


def grade_sync(pool: WorkerPool, item: Mapping[str, Any], timeout_s: float | None = None) -> Verdict:
    """One item (response, gold and options) graded in a worker of ``pool``, waited for."""
    try:
        return pool.call(TASK, item, timeout_s, affinity=item["gold"])
    except TaskFailed as e:
        return failed_verdict(e)


def grade_all(pool: WorkerPool, items: Iterable[Mapping[str, Any]]) -> list[Verdict]:
    """Each item (response, gold and options) graded in a worker of ``pool``, every worker busy; an
    item whose key the pool has graded, or that repeats an earlier item's, is not sent (unless that
    earlier item got no grade)."""
    items = list(items)
    keys = [verdict_key(item) for item in items]
    graded = _graded.setdefault(pool, {})
    first: dict[Hashable, int] = {}  # each key to grade (an item's index where it has none) -> its first item
    for i, key in enumerate(keys):
        if key is None or key not in graded:
            first.setdefault(i if key is None else key, i)
    sent = pool.map(TASK, [items[i] for i in first.values()], failed_verdict, _gold)
    verdicts: dict[int, Verdict] = {i: _remember(pool, keys[i], v) for i, v in zip(first.values(), sent)}
    again = [i for i, key in enumerate(keys) if i not in verdicts and key not in graded]
    verdicts.update(zip(again, pool.map(TASK, [items[i] for i in again], failed_verdict, _gold)))
    return [verdicts[i] if i in verdicts else graded[key] for i, key in enumerate(keys)]
