"""The rejection of values far apart (`equivalence._apart`) gives the verdict math-verify's own
comparison gives: on expressions that differ at one probe point only, on finite sets and tuples
against a value or another set (math-verify compares those by set difference and element by
element, slowly), on their near misses, and it leaves lone symbols, relations, percentages and
close values to math-verify."""

from __future__ import annotations

import pytest
from math_verify import verify as mv_verify

from oracleladder.verify import equivalence
from oracleladder.verify.parse import sym

ARCCOS_GOLD = r"(a) \arccos\left(\frac{4}{5}\right), (b) \sqrt{31}, 3\sqrt{39}"  # a released gold

# (gold, answer): rejected here, before math-verify's comparison
DECIDED = [
    (r"4^{n^{2}/4}", r"\binom{n^2/2}{n^2/4}"),  # within 5% at the first probe point, far at the third
    (r"4^{n^{2}/4}", r"\binom{n^2}{\frac{n^2}{4}}"),
    (r"2^{2n-1}\times\binom{2n-1}{n}+(2^{2n-1}-1)\times\binom{2n-2}{n}",
     r"2^{2n-1} \cdot \binom{2n-1}{n-1} + (2^{n-1} - 1) \cdot 2^{n-1} \cdot \binom{2n-2}{n-1}"),
    (ARCCOS_GOLD, r"2\sqrt{13}"),
    (ARCCOS_GOLD, r"\sqrt{4(x - 5)^2 + 27}"),
    (ARCCOS_GOLD, r"10, 90"),
    (ARCCOS_GOLD, r"\arccos\left(\frac{-y}{\sqrt{27 + y^2}}\right), \sqrt{4(x - 5)^2 + 27}"),
    (r"4 \text{ or } \frac{9}{4}", "4"),  # a set against one of its values: the other is missing
    (r"4 \text{ or } \frac{9}{4}", r"4, 3"),
    (r"\{1, 2, 3\}", r"\{1, 2\}"),
    (r"\{1, 2\}", r"\{1, 2, 3\}"),
    ("x = 3", r"3, 4"),  # a labelled gold is compared by its value
    (r"(1, 2, 3)", r"\{1, 2, 4\}"),
    (r"\frac{9}{4}, 4", "a  is  determined"),  # words, read as a product of symbols
]

# (gold, answer): left to math-verify (equal, too close to call, or not compared by value)
UNDECIDED = [
    (r"4^{n^{2}/4}", r"2^{\frac{n^2}{2}}"),  # equal
    (r"\{1, 2\}", r"\{2, 1\}"),
    (r"\{\frac{1}{3}, 2\}", r"\{0.333333, 2\}"),  # equal to 6 places
    (r"\{\frac{1}{3}, 2\}", r"\{0.3333, 2\}"),  # within 5%: math-verify's rounding decides
    (r"\sqrt{2}", r"\sqrt{2}, \sqrt{2}"),
    (r"\{a, 2\}", r"\{3\}"),  # a lone symbol, compared by name
    (r"x = 1 \text{ and } x = -1", "1"),  # relations
    (r"\{50\%, 2\}", r"\{3\}"),  # a percentage
    ("4", r"\{4\}"),
    (r"(7.5, 12.5)", r"\{3, 4\}"),  # an open interval
    ("x", "y"),
    (r"\frac{9}{4}, 4", "a  is not uniquely determined"),  # a product of more than 12 symbols
]


def _parsed(gold: str, pred: str) -> tuple[object, object]:
    return sym(gold), sym(pred)


@pytest.mark.parametrize("gold, pred", DECIDED)
def test_far_apart_values_are_rejected_as_math_verify_rejects_them(gold: str, pred: str) -> None:
    g, p = _parsed(gold, pred)
    assert equivalence._apart(g, p)
    assert not mv_verify(g, p, timeout_seconds=None)


@pytest.mark.parametrize("gold, pred", UNDECIDED)
def test_the_rest_is_left_to_math_verify(gold: str, pred: str) -> None:
    assert not equivalence._apart(*_parsed(gold, pred))


@pytest.mark.parametrize("gold, pred", DECIDED + UNDECIDED)
def test_every_grader_gives_math_verifys_verdict(monkeypatch: pytest.MonkeyPatch, gold: str, pred: str) -> None:
    strict, paper = equivalence.equivalent.__wrapped__, equivalence.paper_equivalent.__wrapped__

    def graders() -> tuple[bool, bool, bool]:
        return strict(gold, pred, extended=False), strict(gold, pred, extended=True), paper(gold, pred)

    fast = graders()
    monkeypatch.setattr(equivalence, "_apart", lambda g, p: False)
    assert graders() == fast
