"""The two-stage LaTeX parser gives math-verify's objects: every real answer parses to the object the
parser as shipped (full LL) gives, SLL serves where it can and LL takes over where it cannot, and a
parse outside the verifier keeps the shipped parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2
from math_verify import parser as mv_parser

from oracleladder.verify import latex, parse
from oracleladder.verify.extract import all_boxed, strip_reasoning

DATA = Path(__file__).resolve().parents[1] / "data"


def _answers() -> list[str]:
    """Every gold and final box of the released responses and the judged sample (the paper grader's
    reading goes through the same parser)."""
    rows = [json.loads(line) for line in (DATA / "responses_sample.jsonl").open()]
    judged = [json.loads(line) for line in (DATA / "judged_sample.jsonl").open()]
    texts = {r["gold"] for r in rows} | {j["canonical"] for j in judged}
    for response in [r["response_tail"] for r in rows] + [j["response_tail"] for j in judged]:
        texts.update(all_boxed(strip_reasoning(response))[-1:])
    return sorted(t for t in texts if len(t) <= 200)


def _mode_after_math(text: str) -> int:
    p = latex2sympy2._Latex2Sympy().create_parser(text)
    with latex.sll_first():
        p.math()
    return p._interp.predictionMode


def _read(reader, text: str, two_stage: bool) -> str:
    mv_parser.parse_latex_cached.cache_clear()  # math-verify's own memo would hand back the other's object
    try:
        if two_stage:
            obj = reader(text)
        else:
            with pytest.MonkeyPatch.context() as m:
                m.setattr(latex2sympy2, "PSParser", latex._LL_PARSER)
                obj = reader(text)
    except parse.ParseError as e:
        return f"ParseError {e}"
    return sympy.srepr(obj)


def test_real_answers_parse_to_the_shipped_parsers_objects() -> None:
    texts, reader = _answers(), parse.sym.__wrapped__
    assert len(texts) > 150
    differ = [(t, ll, two) for t in texts
              if (ll := _read(reader, t, False)) != (two := _read(reader, t, True))]
    assert differ == []


def test_sll_serves_where_it_can_and_ll_takes_over_where_it_cannot() -> None:
    assert _mode_after_math(r"\frac{3\sqrt{2}}{2}") == PredictionMode.SLL
    assert _mode_after_math(r"4^{n^{2}/4}") == PredictionMode.LL  # SLL reports an error on this one
    mv_parser.parse_latex_cached.cache_clear()
    obj = parse.sym.__wrapped__(r"4^{n^{2}/4}")  # SLL alone would leave math-verify to read the 4 only
    assert isinstance(obj, sympy.Pow) and obj.free_symbols


def test_a_lexer_error_stays_an_error() -> None:
    """`\\1` is no token: LL fails on it, so the retry after SLL must not read past the bad character."""
    with pytest.raises(Exception, match="I don't understand this"):  # latex2sympy2 raises a bare Exception
        with latex.sll_first():
            latex2sympy2._Latex2Sympy().parse(r"\1")
    assert parse.sym.__wrapped__(r"\1") == r"\1"  # math-verify keeps the text it could not parse


def test_parses_outside_the_verifier_keep_the_shipped_parser() -> None:
    p = latex2sympy2._Latex2Sympy().create_parser(r"\frac{1}{2}")
    p.math()
    assert p._interp.predictionMode == PredictionMode.LL


def test_each_numbers_object_is_read_once() -> None:
    def number(text: str) -> object:
        mv_parser.parse_latex_cached.cache_clear()
        return parse.sym.__wrapped__(text).args[0]  # the 12.5 in 2 x 12.5: not folded into a product

    first = number(r"12.5 \cdot x")
    assert number(r"12.5 \cdot y") is first
    assert sympy.srepr(first) == "Float('12.5', precision=53)"
