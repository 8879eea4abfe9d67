"""Pathological inputs return within the limit and the pool keeps working."""

import asyncio
import time

import pytest

from oracleladder.schemas.types import Label
from oracleladder.verify import grade, grade_all, verify
from oracleladder.verify.core import verify_inprocess
from oracleladder.verify.graders import exact_match
from oracleladder.workers import WorkerPool

TOWER = "\\boxed{\\dfrac{5^{(5^{(5^{(5^5)})} - 4)} - 5}{16}}"
BRACES = "\\boxed{" + "{" * 25000 + "}" * 25000 + "}"
DIGITS = "\\boxed{" + "7" * 10000 + "}"
INTEGRAL = "\\boxed{\\frac{\\int_{0}^{\\frac{\\pi}{2}} \\frac{\\sin (2 t)}{100+\\sin (2 t)^{2}} dt}{3}}"


def test_pathological_inputs_bounded():
    for resp in (TOWER, BRACES, DIGITS, INTEGRAL):
        t = time.monotonic()
        v = verify(resp, "3", timeout_s=2.0)
        # the behaviour, not a speed: ended at its 2 s of CPU (or its 20 s wall-clock backstop), not computed for ever
        assert time.monotonic() - t < 60
        assert v.label is Label.NOT_ACCEPT
        assert verify("\\boxed{3}", "3", timeout_s=2.0).label is Label.ACCEPT


def test_hung_worker_is_killed_and_replaced():
    with WorkerPool(workers=1, timeout_s=0.001) as pool:  # nothing finishes in 1 ms
        assert grade_all(pool, [{"response": "\\boxed{x^2+2x+1}", "gold": "(x+1)^2"}])[0].reason == "timeout"
        pool.timeout_s = 5.0
        assert grade_all(pool, [{"response": "\\boxed{3}", "gold": "3"}])[0].label is Label.ACCEPT


def test_async_verify():
    async def go():
        with WorkerPool(workers=2) as pool:
            return await asyncio.gather(grade(pool, "\\boxed{3}", "3"), grade(pool, "\\boxed{4}", "3"))
    a, b = asyncio.run(go())
    assert a.label is Label.ACCEPT and b.label is Label.NOT_ACCEPT


@pytest.mark.parametrize("response, gold, decided", [
    ("So \\boxed{(x-2)(x-3)=0}.", "(x-2)(x-3)=0", True),
    ("\\boxed{ \\dfrac{1}{2} }", "\\frac{1}{2}", True),
    ("draft \\boxed{1} </think> final \\boxed{5}", "5", True),
    ("<think>\\boxed{5}</think> no box", "5", False),
    ("\\boxed{5} then \\boxed{6}", "5", False),
    ("\\boxed{0.5}", "\\frac{1}{2}", False),  # equal, but only the full cascade can say so
    ("\\boxed{}", "", False),
    ("\\boxed{%s}" % ("9" * 50), "9" * 50, False),  # screened: too many digits
    ("no box at all: 5", "5", False),
])
def test_exact_match_is_the_cascades_verdict(response: str, gold: str, decided: bool) -> None:
    quick = exact_match(response, gold)
    assert (quick is not None) == decided
    if quick is not None:
        slow = verify_inprocess(response, gold)
        assert (quick.label, quick.reason, quick.extracted) == (slow.label, slow.reason, slow.extracted)


async def test_pool_answers_exact_matches_without_a_worker() -> None:
    with WorkerPool(workers=1, timeout_s=0.001) as pool:  # a worker would time out in 1 ms
        assert (await grade(pool, "\\boxed{\\frac{1}{2}}", "\\frac{1}{2}")).label is Label.ACCEPT
        assert (await grade(pool, "\\boxed{\\sqrt{4}}", "2")).reason == "timeout"  # went to the worker (SymPy)
