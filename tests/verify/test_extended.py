"""Each extended rule, with accepts and near-miss rejects; order counts for ordered golds."""

import pytest

from oracleladder.schemas.types import Label
from oracleladder.verify import verify_inprocess


def ok(resp: str, gold: str, extended: bool = True, **kw) -> bool:
    return verify_inprocess(resp, gold, extended=extended, **kw).label is Label.ACCEPT


@pytest.mark.parametrize("gold,good,bad", [
    ("2a-c=0", ["c=2a", "-c=-2a"], ["c=-2a", "c=2b"]),  # rearrangement / constant factor
    ("x\\le 3", ["(-\\infty, 3]", "3 \\ge x"], ["(-\\infty, 3)", "x<3", "x \\ge 3"]),  # solution sets
    ("[0,1)", ["0 \\le x < 1"], ["0 \\le x \\le 1", "0 < x < 1"]),
    ("(-\\infty,1)\\cup(2,\\infty)", ["x<1 \\text{ or } x>2"], ["x<1"]),
    ("\\frac{3}{2}", ["S=\\frac{3}{2}", "S = 1.5"], ["S=-\\frac{3}{2}"]),  # labelled vs bare
    ("1234", ["1,234"], ["1,243"]),
])
def test_extended_single(gold, good, bad):
    for p in good:
        assert ok(f"\\boxed{{{p}}}", gold), (gold, p)
    for p in bad:
        assert not ok(f"\\boxed{{{p}}}", gold), (gold, p)


def test_thousands_only_for_a_whole_number():
    assert not ok("\\boxed{(1,234)}", "1234")
    assert ok("\\boxed{(1,234)}", "(1,234)")


def test_compound_by_name_position_and_unordered():
    gold = "x=1, y=2"
    assert ok("\\boxed{y=2, x=1}", gold)  # by name
    assert ok("\\boxed{(1, 2)}", gold)  # by position
    assert ok("\\boxed{(x, y) = (1, 2)}", gold)
    assert not ok("\\boxed{(2, 1)}", gold)  # swapped coordinates
    assert not ok("\\boxed{x=2, y=1}", gold)
    assert not ok("\\boxed{x=1, z=2}", gold)  # a different variable
    assert not ok("\\boxed{x=1}", gold)  # a missing solution
    assert ok("\\boxed{3, -1}", "-1, 3")  # unordered list
    assert not ok("\\boxed{3}", "-1, 3")


def test_swapped_tuple_rejected_in_both_modes():
    for ext in (False, True):
        assert not ok("\\boxed{(2, 1)}", "(1,2)", extended=ext)
        assert ok("\\boxed{(1, 2)}", "(1,2)", extended=ext)


def test_several_boxes():
    assert ok("\\boxed{174} and \\boxed{13}", "174,13")
    assert not ok("\\boxed{174} and \\boxed{31}", "174,13")
    assert not ok("\\boxed{13}", "174,13")


def test_mcq_value_from_problem():
    problem = "Find the distance. (A) 2.5 m (B) 3 m (C) 3.15 m (D) 4 m"
    assert ok("\\boxed{C}", "C", problem=problem)
    assert ok("\\boxed{3.15}", "C", problem=problem)
    assert not ok("\\boxed{3}", "C", problem=problem)
    assert not ok("\\boxed{B}", "C", problem=problem)
    assert not ok("\\boxed{3.15}", "C")  # without options the value cannot be checked
