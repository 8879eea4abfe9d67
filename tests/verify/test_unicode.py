"""Unicode math in an answer (issue 11, item 12) is normalized before parsing; near misses stay rejected."""

from __future__ import annotations

import pytest

from oracleladder.verify import verify

CASES = [  # (gold, boxed answer as a model writes it, accepted)
    (r"\sqrt{2}", "√2", True),
    (r"\sqrt{3}", "√2", False),
    (r"2\sqrt{x+1}", "2√(x+1)", True),
    (r"\frac{1}{2}", "½", True),
    (r"\frac{1}{3}", "½", False),
    (r"\frac{15}{4}", "3¾", True),  # the mixed number 3 3/4
    (r"\frac{9}{4}", "3¾", False),
    ("x^2", "x²", True),
    ("x^3", "x²", False),
    (r"\frac{1}{x}", "x⁻¹", True),
    (r"\infty", "∞", True),
    (r"\infty", "-∞", False),
    (r"(-\infty, 2]", "(−∞, 2]", True),
    ("1000", "1\u00a0000", False),  # a spaced number is two tokens, as with an ASCII space
    ("25", "2\u200b5", True),  # zero-width space: nothing between the digits
    ("25", "2\u2009\u200b", False),
    ("42", "４２", True),
    ("24", "４２", False),
    (r"x \le 3", "x ≤ 3", True),
    (r"x \ge 3", "x ≤ 3", False),
    (r"\pi", "π", True),
]


@pytest.mark.parametrize("gold,answer,accepted", CASES)
def test_unicode_math(gold: str, answer: str, accepted: bool) -> None:
    v = verify(rf"so \boxed{{{answer}}}", gold, in_process=True)
    assert v.accepted is accepted, v


def test_unicode_gold_and_nbsp_around_the_box() -> None:
    assert verify("answer:\u00a0\\boxed{\u00a0\\frac{1}{2}\u00a0}", "½").accepted
    assert not verify("answer:\u00a0\\boxed{\u00a0\\frac{1}{3}\u00a0}", "½").accepted
