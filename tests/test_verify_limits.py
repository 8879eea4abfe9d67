"""Pathological inputs return within the limit and the pool keeps working."""

import asyncio
import time

from oracleladder.probe.verify import VerifierPool, verify
from oracleladder.schemas.types import Label

TOWER = "\\boxed{\\dfrac{5^{(5^{(5^{(5^5)})} - 4)} - 5}{16}}"
BRACES = "\\boxed{" + "{" * 25000 + "}" * 25000 + "}"
DIGITS = "\\boxed{" + "7" * 10000 + "}"
INTEGRAL = "\\boxed{\\frac{\\int_{0}^{\\frac{\\pi}{2}} \\frac{\\sin (2 t)}{100+\\sin (2 t)^{2}} dt}{3}}"


def test_pathological_inputs_bounded():
    for resp in (TOWER, BRACES, DIGITS, INTEGRAL):
        t = time.monotonic()
        v = verify(resp, "3", timeout_s=2.0)
        assert time.monotonic() - t < 2.5
        assert v.label is Label.NOT_ACCEPT
        assert verify("\\boxed{3}", "3", timeout_s=2.0).label is Label.ACCEPT


def test_hung_worker_is_killed_and_replaced():
    with VerifierPool(workers=1, timeout_s=0.001) as pool:  # nothing finishes in 1 ms
        assert pool.map([{"response": "\\boxed{x^2+2x+1}", "gold": "(x+1)^2"}])[0].reason == "timeout"
        pool.timeout_s = 5.0
        assert pool.map([{"response": "\\boxed{3}", "gold": "3"}])[0].label is Label.ACCEPT


def test_async_verify():
    async def go():
        with VerifierPool(workers=2) as pool:
            return await asyncio.gather(pool.verify("\\boxed{3}", "3"), pool.verify("\\boxed{4}", "3"))
    a, b = asyncio.run(go())
    assert a.label is Label.ACCEPT and b.label is Label.NOT_ACCEPT
