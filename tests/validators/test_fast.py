"""The validators' fast path (validators/_fast.py) agrees with the full LaTeX parser and verifier:
every answer it reads, it reads as math-verify does; every decision it takes, the slow path takes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import sympy

from oracleladder.schemas.types import AnswerSchema
from oracleladder.validators._fast import clearly_not_equivalent, read, schema_ok
from oracleladder.verify import answers_equivalent, parse_answer
from oracleladder.verify.normalize import normalize
from oracleladder.verify.parse import sym


def _expr(rng: random.Random, depth: int = 0) -> str:
    """A random expression of the subset (and now and then just outside it)."""
    leaf = rng.random() < 0.4 or depth > 2
    if leaf:
        return rng.choice([str(rng.randint(0, 120)), f"{rng.randint(0, 9)}.{rng.randint(1, 99)}",
                           rng.choice("abcdfghkmnpqrtuvwxyz"), "\\pi", f"x_{rng.randint(1, 4)}",
                           f"{rng.randint(2, 9)}{rng.choice('xyn')}"])
    a, b = _expr(rng, depth + 1), _expr(rng, depth + 1)
    return rng.choice([
        f"{a}+{b}", f"{a}-{b}", f"{a}\\cdot {b}", f"\\frac{{{a}}}{{{b}}}", f"({a})({b})",
        f"({a})^{rng.randint(0, 4)}", f"({a})^{{{rng.randint(-2, 3)}}}", f"\\sqrt{{{a}}}", f"-({a})",
        f"{rng.randint(2, 9)}({a})", f"{a}/{b}", f"{a}\\times {b}",
    ])


def _corpus() -> list[str]:
    rng = random.Random(7)
    out = [
        "5", "-5", "0.5", "1.25", "\\frac{1}{2}", "-\\frac{3}{4}", "2x", "x^2-5x+6", "(x-2)(x-3)=0", "x=7",
        "\\{2,3\\}", "\\{3,2\\}", "\\{-2, \\frac{1}{2}\\}", "\\{x\\}", "\\{5\\}", "2^{10}", "x^{-1}", "2=2",
        "x=x", "\\sqrt{8}", "\\sqrt{16}", "3\\pi", "\\frac{\\pi}{4}", "0", "0.001", "100\\%", "\\$5",
        "a_{12}+1", "\\left(x+1\\right)^2", "\\dfrac{7}{3}", "12345678901234567890", "x^23", "xy",
        "2 3", "(2,3)", "e", "i", "E", "x=y=2", "\\{\\}", "\\frac{1}{0}", "(-3)^{-2}", "-x^2",
    ]
    out += [_expr(rng) for _ in range(150)]
    out += [f"{_expr(rng)}={_expr(rng)}" for _ in range(60)]
    out += ["\\{" + ", ".join(_expr(rng, 2) for _ in range(rng.randint(1, 3))) + "\\}" for _ in range(40)]
    return out


def _close(a: complex, b: complex) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _num(o) -> complex:
    return complex(sympy.N(o, 30))


@pytest.mark.parametrize("text", _corpus())
def test_read_agrees_with_the_latex_parser(text: str) -> None:
    p = read(text)
    if p is None:
        return  # outside the subset: nothing claimed
    slow = sym(normalize(text))
    if p.kind == "set":
        assert isinstance(slow, sympy.FiniteSet), (text, slow)
        consts = [v for v in p.items if not isinstance(v, str)]
        if len(consts) == len(p.items):
            assert sorted(_num(v).real for v in slow.args) == pytest.approx(sorted({float(v) for v in consts}))
        return
    if p.kind == "equation":
        assert isinstance(slow, sympy.Eq), (text, slow)
        if not isinstance(p.rhs, str):
            assert not slow.rhs.free_symbols and _close(_num(slow.rhs), complex(float(p.rhs))), (text, slow)
        return
    assert isinstance(slow, sympy.Basic) and not isinstance(slow, (sympy.Set, sympy.Tuple, sympy.Eq))
    if not isinstance(p.value, str):
        assert not slow.free_symbols and _close(_num(slow), complex(float(p.value))), (text, slow, p.value)
    else:
        assert slow.free_symbols, (text, slow)


@pytest.mark.parametrize("text", _corpus())
def test_schema_ok_only_where_the_parser_accepts(text: str) -> None:
    for schema in AnswerSchema:
        if schema_ok(text, schema):
            parse_answer(text, schema)  # raises if the fast path were wrong


def _pairs() -> list[tuple[str, str]]:
    rng = random.Random(11)
    corpus = _corpus()
    parents = ["5", "7", "0.5", "\\frac{1}{2}", "12", "0", "-3", "2\\sqrt{2}", "\\pi", "100", "1.02", "x+1"]
    pairs = [(p, g) for p in parents for g in rng.sample(corpus, 25)]
    pairs += [("5", "5.0"), ("5", "x=5"), ("5", "(x-5)=5"), ("5", "\\{5\\}"), ("5", "\\{5,5\\}"), ("5", "\\{4.99\\}"),
              ("5", "2x=10"), ("0", "(x-2)(x-3)=0"), ("6", "\\{2,3\\}"), ("0.5", "\\frac{1}{2}"), ("5", "\\{5, 6\\}")]
    return pairs


@pytest.mark.parametrize("pair", _pairs())
def test_no_leak_only_where_the_verifier_disagrees(pair: tuple[str, str]) -> None:
    parent, gold = pair
    if clearly_not_equivalent(parent, gold):
        assert not answers_equivalent(parent, gold, extended=True), pair


def test_the_released_golds(release_data: Path) -> None:
    """On the released families, each fast decision matches the full path, and many are taken."""
    taken = 0
    for line in (release_data / "families_sample.jsonl").read_text().splitlines():
        f = json.loads(line)
        for m in f["milestones"]:
            if clearly_not_equivalent(f["parent_answer"], m["answer"]):
                taken += 1
                assert not answers_equivalent(f["parent_answer"], m["answer"], extended=True)
            for schema in AnswerSchema:
                if schema_ok(m["answer"], schema):
                    parse_answer(m["answer"], schema)
    assert taken >= 10
