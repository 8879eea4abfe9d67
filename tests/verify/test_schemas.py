"""Per-schema accept / near-miss reject cases for the strict cascade."""

import pytest

from oracleladder.schemas.types import AnswerSchema as S, Label
from oracleladder.verify import ParseError, answers_equivalent, infer_schema, parse_answer, verify_inprocess

CASES = [  # (schema, gold, accepted, rejected near misses)
    (S.NUMBER, "\\frac{1}{2}", ["0.5", "\\dfrac{1}{2}", "1/2"], ["-\\frac{1}{2}", "2"]),
    (S.NUMBER, "3279", ["3279", "3279."], ["3297", "-3279"]),
    (S.EXPR, "3\\sqrt{2}", ["\\sqrt{18}", "3\\sqrt{2} \\text{ meters}"], ["-3\\sqrt{2}", "2\\sqrt{3}"]),
    (S.EXPR, "4^{n^{2}/4}", ["2^{\\frac{n^2}{2}}"], ["2^{n^2}", "4^{n^2/2}"]),
    (S.EQUATION, "y=13-2x", ["y = -2x + 13"], ["y=13+2x", "x=13-2y"]),
    (S.INEQUALITY, "n\\geq 7", ["n \\ge 7"], ["n > 7", "n \\le 7"]),
    (S.SET, "\\{1,2,3\\}", ["\\{3,2,1\\}"], ["\\{1,2\\}", "\\{1,2,4\\}"]),
    (S.INTERVAL, "[0,\\pi/2]", ["\\left[0, \\frac{\\pi}{2}\\right]"], ["[0,\\pi/2)", "(0,\\pi/2]"]),
    (S.TUPLE_LIST, "(1,2)", ["(1, 2)"], ["(2,1)", "(1,-2)"]),
    (S.MATRIX_VECTOR, "\\begin{pmatrix}1\\\\ 0\\end{pmatrix}", ["\\begin{pmatrix}1\\\\0\\end{pmatrix}"],
     ["\\begin{pmatrix}0\\\\ 1\\end{pmatrix}"]),
    (S.MCQ_STRING, "C", ["C", "(C)", "\\text{(C)}"], ["D", "(B)"]),
]


@pytest.mark.parametrize("schema,gold,good,bad", CASES)
def test_schema_strict(schema, gold, good, bad):
    parse_answer(gold, schema)
    for p in good:
        v = verify_inprocess(f"so \\boxed{{{p}}}", gold)
        assert v.label is Label.ACCEPT, (gold, p, v)
    for p in bad:
        v = verify_inprocess(f"so \\boxed{{{p}}}", gold)
        assert v.label is Label.NOT_ACCEPT, (gold, p, v)


def test_parse_answer_rejects_wrong_schema():
    with pytest.raises(ParseError):
        parse_answer("x+1", S.NUMBER)
    with pytest.raises(ParseError):
        parse_answer("x+1", S.EQUATION)
    with pytest.raises(ParseError):
        parse_answer("3.5", S.MCQ_STRING)


def test_infer_schema():
    assert infer_schema("42") is S.NUMBER
    assert infer_schema("C") is S.MCQ_STRING
    assert infer_schema("[0,1)") is S.INTERVAL
    assert infer_schema("(1,2),(3,4)") is S.TUPLE_LIST
    assert infer_schema("y=13-2x") is S.EQUATION
    assert infer_schema("n\\geq 7") is S.INEQUALITY
    assert infer_schema("\\{1,2\\}") is S.SET
    assert infer_schema("\\frac{a^2}{8}") is S.EXPR


def test_cascade_stages():
    assert verify_inprocess("no answer here", "3").reason == "no boxed"
    assert verify_inprocess("\\boxed{3", "3").reason == "no boxed"  # unclosed box
    assert verify_inprocess("<think>\\boxed{3}</think> so \\boxed{4}", "3").label is Label.NOT_ACCEPT
    assert verify_inprocess("<think>\\boxed{4}</think> so \\fbox{3}", "3").label is Label.ACCEPT
    assert verify_inprocess("\\boxed{x+1}", "5", schema=S.NUMBER).reason.startswith("parse error")
    assert answers_equivalent("a\\le -2", "a \\leq -2")
