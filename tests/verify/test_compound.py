"""The compound-answer loop: boxes read together only where that can accept what the last box alone
does not, and a join that breaks SymPy fails alone."""

from __future__ import annotations

import pytest

from oracleladder.schemas.types import Label
from oracleladder.verify import core
from oracleladder.verify.core import verify_inprocess
from oracleladder.verify.equivalence import compound_answers


@pytest.mark.parametrize("grader", ["strict", "extended"])
def test_a_join_of_a_labelled_tuple_and_a_value_grades_without_an_exception(grader: str) -> None:
    # the join `(x, y) = (30, 48), 5` reads as an equation between a tuple and a set, and the
    # extended rule for equations subtracted one side from the other: TypeError (issue 36)
    v = verify_inprocess(r"So \boxed{(x, y) = (30, 48)} and then \boxed{5}", "x+y=78", grader=grader)
    assert (v.label, v.reason, v.extracted) == (Label.NOT_ACCEPT, "not equivalent", "5")
    v = verify_inprocess(r"\boxed{(a, m, n) = (2, m, 2^t m)} \boxed{64}", r"\delta=40^\circ", grader=grader)
    assert (v.label, v.reason, v.extracted) == (Label.NOT_ACCEPT, "not equivalent", "64")


def test_a_join_that_raises_fails_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    real, raised = core.equivalent, []

    def breaks_on_two_boxes(gold: str, pred: str, **kwargs: object) -> bool:
        if pred == r"x=-\frac{12}{5}, z=8":
            raised.append(pred)
            raise TypeError("a SymPy operation this join's objects do not support")
        return real(gold, pred, **kwargs)

    monkeypatch.setattr(core, "equivalent", breaks_on_two_boxes)
    v = verify_inprocess(r"\boxed{w=-8} \boxed{x=-\frac{12}{5}} \boxed{z=8}", r"w=-8, x=-\frac{12}{5}, z=8")
    assert raised and (v.label, v.reason) == (Label.ACCEPT, "equivalent over 3 boxes")


def test_a_single_value_gold_reads_no_join_of_plain_boxes() -> None:
    assert compound_answers("6", ["1", "2", "3"]) == []
    assert compound_answers(r"3\sqrt{2}", [r"\frac{1}{2}", "x^2", "(1, 2)", r"\{3\}"]) == []
    v = verify_inprocess(r"\boxed{1} \boxed{2} \boxed{3}", "6")
    assert (v.label, v.reason, v.extracted) == (Label.NOT_ACCEPT, "not equivalent", "3")


@pytest.mark.parametrize(("response", "gold"), [
    (r"\boxed{4} and \boxed{\frac{9}{4}}", r"4 \text{ or } 2 \frac{1}{4}"),  # a case split
    (r"\boxed{1} and \boxed{2}", r"\{1, 2\}"),  # a set
    (r"\boxed{3} \boxed{-3}", r"\pm 3"),  # two values in one sign
    (r"\boxed{(A)} so \boxed{3}", "A"),  # an option letter
    (r"\boxed{x = 5} for \boxed{x \in \mathbb{Z}}", "5"),  # a domain clause read off the last box
    (r"\boxed{n = 2^k}, \boxed{k \in \mathbb{N}}", "n=2^k"),
    (r"\boxed{[1} \boxed{2)}", "[1, 2)"),  # brackets opened in one box, closed in the next
    (r"\boxed{4} \boxed{}", "4"),  # an empty last box
])
@pytest.mark.parametrize("grader", ["strict", "extended"])
def test_joins_that_can_accept_are_still_read(response: str, gold: str, grader: str) -> None:
    v = verify_inprocess(response, gold, grader=grader)
    assert (v.label, v.reason) == (Label.ACCEPT, "equivalent over 2 boxes")
