"""The exact fast path for plain numbers gives the cascade's own verdict, on every form it reads and
on the near misses where math-verify's 6-place float rounding decides, and leaves the rest to it."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest

from oracleladder.verify import equivalence, exact
from oracleladder.verify.core import verify_inprocess

# Each value in the forms a student or a gold writes it, and its near misses.
FORMS = [
    "0", "-0", "7", "+7", "007", "-7", "12", "1000000", "999999", "1234567", "12345678901234567890123",
    "0.5", ".5", "-0.5", "0.50", "3.0", "3", "3.14", "3.1400001", "3.141593", "3.1415926",
    "0.333333", "0.3333333", "0.333334", "0.3333335", "0.0000005", "0.000001", "0.0000015", "0.0000025",
    "2.000001", "2.0000015", "2.000002", "2.000003", "1.9", "2.1", "1.95", "2.05",
    "999999.5", "1234567.5", "123456.789", "123456.7890001",
    r"\frac{1}{2}", "1/2", r"\frac{2}{4}", r"-\frac{1}{2}", r"\frac{-1}{2}", r"\frac{1}{-2}", "-1/2",
    r"\frac{1}{3}", r"\frac{333333}{1000000}", r"\frac{2}{1}", "4/2", "2", r"\frac{7}{1}", r"\frac{21}{20}",
    r"\frac{1}{2000000}", r"\frac{3}{2000000}", r"\frac{20}{19}",
]
NOT_PLAIN = ["3.", "1 000", r"2\frac{1}{2}", r"\frac{5}{0}", "1e5", "x", r"2\times10^{3}", r"50\%", "1,000",
             r"\sqrt{2}", "0.5.1", r"\frac{1}{2}x", "", "-", "1" * 41]


def _graders(gold: str, pred: str) -> tuple[bool, bool, bool]:
    """The three graders' equivalence, each pair decided afresh (not from the process's memo)."""
    strict, paper = equivalence.equivalent.__wrapped__, equivalence.paper_equivalent.__wrapped__
    return strict(gold, pred, extended=False), strict(gold, pred, extended=True), paper(gold, pred)


def test_plain_reads_every_form_exactly() -> None:
    assert exact.plain(r"-\frac{1}{-2}") == exact.Plain(Fraction(1, 2), None)
    assert exact.plain(" 007 ") == exact.Plain(Fraction(7), None)
    assert exact.plain("-0.50") == exact.Plain(Fraction(-1, 2), 2)
    assert exact.plain("4/2") == exact.Plain(Fraction(2), None)
    assert [s for s in NOT_PLAIN if exact.plain(s) is not None] == []


def test_fast_verdicts_are_the_cascades(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = list(product(FORMS, repeat=2))
    fast = {pair: exact.decide(*pair) for pair in pairs}
    decided = [pair for pair in pairs if fast[pair] is not None]
    assert len(decided) > 0.8 * len(pairs)  # the fast path is the rule, not the exception
    monkeypatch.setattr(exact, "decide", lambda gold, pred: None)
    differ = [(pair, fast[pair], slow) for pair in decided if (slow := _graders(*pair)) != (fast[pair],) * 3]
    assert differ == []


def test_undecided_pairs_go_to_the_cascade(monkeypatch: pytest.MonkeyPatch) -> None:
    assert exact.decide("0.333333", r"\frac{1}{3}") is None  # 6-place rounding: math-verify's call
    assert exact.decide("0.0000005", r"\frac{1}{2000000}") is None  # equal, but off the 6-place grid
    assert exact.decide("1234567.5", "1234567.5000001") is None  # a float's error is no longer negligible
    assert exact.decide("2", r"\sqrt{4}") is None
    assert equivalence.equivalent("0.333333", r"\frac{1}{3}", extended=False)
    assert verify_inprocess(r"\boxed{\sqrt{4}}", "2").accepted


LABELS = ["x", "y_1", "x_{1}", "a_{n}", "Q_{in}", "n"]
CONSTANT_LABELS = ["e", "E_1", "i", "I_{1}"]  # math-verify reads these as constants: left to it
LABELLED_VALUES = ["3", "-2", r"\frac{15}{2}", "7.5", "0.333333", "3.5", r"\frac{1}{3}", "0.3333333"]


def test_a_labelled_number_against_a_bare_one_gets_the_cascades_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [(f"{name} = {v}", w) for name in LABELS for v, w in product(LABELLED_VALUES, repeat=2)]
    pairs += [(w, f"{name}={v}") for w, name, v in product(LABELLED_VALUES[:4], LABELS, LABELLED_VALUES)]
    fast = {pair: exact.decide(*pair) for pair in pairs}
    assert sum(v is not None for v in fast.values()) > 0.8 * len(pairs)
    monkeypatch.setattr(exact, "decide", lambda gold, pred: None)
    differ = [(pair, fast[pair], slow) for pair in pairs
              if fast[pair] is not None and (slow := _graders(*pair)) != (fast[pair],) * 3]
    assert differ == []


def test_labels_read_as_constants_and_two_labels_go_to_the_cascade() -> None:
    assert [name for name in CONSTANT_LABELS if exact.decide(f"{name} = 3", "3") is not None] == []
    assert exact.decide("x = 3", "y = 3") is None  # two relations: math-verify compares them as relations
    assert exact.decide("x = 3", r"3\sqrt{2}") is None
    assert exact.decide("x = 3 = y", "3") is None
    assert not equivalence.equivalent.__wrapped__("e = 3", "3", extended=False)  # e = 3 is no label here
