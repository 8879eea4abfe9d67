"""A run's pool grades each answer once: a second answer with the same verdict key (grader, gold,
schema, problem, the last boxes the grader reads) gets the first one's grade without a worker's
round trip (the very object, where a worker's answer is a fresh one), identical answers in flight
wait for the first, and nothing but a grade is shared."""

from __future__ import annotations

import asyncio

from oracleladder.schemas.types import GradeStatus
from oracleladder.verify import grade, grade_all, verify_inprocess
from oracleladder.verify.pool import verdict_key
from oracleladder.workers import shared_pool

HANG = "\\boxed{2^{2^{30}}}"  # passes the screen; SymPy does not finish it in minutes


def _item(response: str, gold: str, **options: str) -> dict[str, str]:
    return {"response": response, "gold": gold, **options}


async def test_an_answer_graded_once_in_a_pool_is_not_sent_again() -> None:
    pool, problem = shared_pool(), "memo: a graded answer"  # the problem keeps this test's keys its own
    first = await grade(pool, "so \\boxed{\\frac{6}{4}}", "1.5", problem=problem)
    assert first.accepted
    assert await grade(pool, "other words, same box: \\boxed{\\frac{6}{4}}", "1.5", problem=problem) is first
    assert await grade(pool, "so \\boxed{\\frac{6}{4}}", "1.5", problem=problem, grader="paper") is not first
    assert await grade(pool, "so \\boxed{\\frac{6}{4}}", "3/2", problem=problem) is not first


async def test_identical_answers_in_flight_wait_for_the_first() -> None:
    pool, problem = shared_pool(), "memo: in flight"
    a, b = await asyncio.gather(grade(pool, "\\boxed{x^2-1}", "(x-1)(x+1)", problem=problem),
                                grade(pool, "hence \\boxed{x^2-1}", "(x-1)(x+1)", problem=problem))
    assert a is b and a.accepted


def test_grade_all_sends_each_key_once_and_gives_the_cascades_verdicts() -> None:
    problem = "memo: grade_all"
    items = [_item("\\boxed{4} \\boxed{9/4}", "4 \\text{ or } 2 \\frac{1}{4}", problem=problem),
             _item("so \\boxed{4} and \\boxed{9/4}", "4 \\text{ or } 2 \\frac{1}{4}", problem=problem),
             _item("\\boxed{5} \\boxed{9/4}", "4 \\text{ or } 2 \\frac{1}{4}", problem=problem),  # another box read
             _item("\\boxed{4} \\boxed{9/4}", "4 \\text{ or } 2 \\frac{1}{4}", problem=problem, grader="paper"),
             _item("\\boxed{5} \\boxed{9/4}", "4 \\text{ or } 2 \\frac{1}{4}", problem=problem, grader="paper")]
    verdicts = grade_all(shared_pool(), items)
    assert verdicts == [verify_inprocess(**item) for item in items]
    assert verdicts[1] is verdicts[0] and verdicts[0].reason == "equivalent over 2 boxes"
    assert verdicts[2] is not verdicts[0]  # strict reads the boxes before the last
    assert verdicts[4] is verdicts[3]  # paper reads the last box alone
    assert grade_all(shared_pool(), items[:1]) == [verdicts[0]] and grade_all(shared_pool(), items[:1])[0] is verdicts[0]


async def test_a_timeout_is_the_items_own() -> None:
    pool = shared_pool()
    a, b = await asyncio.gather(grade(pool, HANG, "3", timeout_s=0.5, problem="memo: hang"),
                                grade(pool, "then " + HANG, "3", timeout_s=0.5, problem="memo: hang"))
    assert a.status is b.status is GradeStatus.LIMIT and a is not b  # each tried on its own
    assert verdict_key(_item(HANG, "3", problem="memo: hang")) == verdict_key(_item("then " + HANG, "3", problem="memo: hang"))


def test_keys_leave_unknown_graders_and_long_answers_to_the_worker() -> None:
    assert verdict_key(_item("\\boxed{1}", "1", grader="lenient")) is None
    assert verdict_key(_item("\\boxed{1}", "1", grader="lenient", extended=True)) is None
    assert verdict_key(_item("x" * 30_000 + "\\boxed{1}", "1")) is None
    assert verdict_key(_item("\\boxed{1}", "1", extended=True))[0] == "extended"
