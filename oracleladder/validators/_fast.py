r"""A fast path for the validators' commonest answers, so they need not reach the LaTeX parser.

The schema and leak checks parse every gold with math-verify's LaTeX parser (an ANTLR grammar in
pure Python): about 4 ms for ``(x-2)(x-3)=0`` and 12 ms for ``\{2,3\}``, which dominates a
compile's CPU. Most golds and parent answers are far simpler than what that parser covers, so this
module reads a small LaTeX subset itself and answers only where the answer is certain:

* ``schema_ok(text, schema)`` is True only when the full parser would also accept ``text`` under
  ``schema`` (a number, an expression, one equation, a set of expressions); None means "ask the
  full parser", never "it fails";
* ``clearly_not_equivalent(parent, gold)`` is True only when the verifier's equivalence cannot
  hold: the parent answer is a constant and the gold a constant, an equation whose right side is a
  constant (math-verify compares a bare value with an equation's right side), or a set of
  constants, that differ from it by more than 5% (the margin ``equivalence._clearly_different``
  uses; float rounding to 6 places cannot bridge it). Anything else goes to the full cascade.

The subset (after the verifier's ``normalize``; ``screen`` must pass): decimal numbers, the single
lower-case letters ``a b f j k n p q r u v w x y z`` (optionally subscripted by digits; math-verify
reads ``e`` as Euler's number, ``i`` as imaginary, and drops ``c d g h l m o s t`` after a number as
units), ``\pi``, ``+ - * /``,
``\cdot``, ``\times``, implicit products of a number or factor with a letter or a parenthesis,
``^`` with a one-digit or braced integer exponent, ``( )`` around a sum or difference, ``\frac{..}{..}``, ``\sqrt{..}``; at the
top level also one ``=`` or a set ``\{a, b, ...\}``. Two letters in a row are refused (``xy``,
and words such as ``or`` that the verifier reads specially). ``tests/validators/test_fast.py``
checks every decision against the full parser and verifier.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from oracleladder.schemas.types import AnswerSchema
from oracleladder.verify.normalize import normalize
from oracleladder.verify.screen import screen

Const = Fraction | float
SYMBOLIC = "symbolic"  # an expression with free symbols: no value
Value = Fraction | float | str

MARGIN = 0.05
_MAX_EXP = 64

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<var>[abfjknpqruvwxyz](?:_(?:\d|\{\d+\}))?(?![A-Za-z]))"
    r"|(?P<cmd>\\(?:frac|sqrt|cdot|times|pi)(?![A-Za-z])|\\[{}])|(?P<op>[-+*/^(){}=,]))"
)


class _Refuse(Exception):
    """Outside the subset: let the full parser decide."""


def _tokens(s: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise _Refuse
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _add(a: Value, b: Value, sign: int) -> Value:
    if isinstance(a, str) or isinstance(b, str):
        return SYMBOLIC
    return a + b if sign > 0 else a - b


def _mul(a: Value, b: Value) -> Value:
    if isinstance(a, str) or isinstance(b, str):
        return SYMBOLIC
    return a * b


def _div(a: Value, b: Value) -> Value:
    if isinstance(b, str):
        return SYMBOLIC
    if b == 0:
        raise _Refuse
    if isinstance(a, str):
        return SYMBOLIC
    return a / b


def _pow(a: Value, n: int) -> Value:
    if abs(n) > _MAX_EXP:
        raise _Refuse
    if isinstance(a, str):
        return SYMBOLIC
    if a == 0 and n < 0:
        raise _Refuse
    try:
        return a ** n
    except OverflowError:
        raise _Refuse from None


def _sqrt(a: Value) -> Value:
    if isinstance(a, str):
        return SYMBOLIC
    if a < 0:
        raise _Refuse
    if isinstance(a, Fraction):
        n, d = math.isqrt(a.numerator), math.isqrt(a.denominator)
        if n * n == a.numerator and d * d == a.denominator:
            return Fraction(n, d)
    return math.sqrt(a)


class _Parser:
    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks = toks
        self.i = 0
        self.sums = 0  # + and - signs read so far

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, text: str | None = None) -> tuple[str, str]:
        t = self.peek()
        if t is None or (text is not None and t[1] != text):
            raise _Refuse
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        t = self.peek()
        return t is not None and t[1] == text

    def expr(self) -> Value:
        sign = 1
        if self.at("-") or self.at("+"):
            sign = -1 if self.take()[1] == "-" else 1
            self.sums += 1
        v = self.term()
        if sign < 0:
            v = _mul(Fraction(-1), v)
        while self.at("+") or self.at("-"):
            s = 1 if self.take()[1] == "+" else -1
            self.sums += 1
            v = _add(v, self.term(), s)
        return v

    def _starts_implicit(self, prev_kind: str) -> bool:
        t = self.peek()
        if t is None:
            return False
        kind, text = t
        if kind == "var":
            if prev_kind == "var":
                raise _Refuse  # xy, or a word: the verifier reads those specially
            return True
        return text in ("(", "\\frac", "\\sqrt", "\\pi")

    def term(self) -> Value:
        v, last = self.factor()
        while True:
            if self.at("*") or self.at("\\cdot") or self.at("\\times"):
                self.take()
                f, last = self.factor()
                v = _mul(v, f)
            elif self.at("/"):
                self.take()
                f, last = self.factor()
                v = _div(v, f)
            elif self._starts_implicit(last):
                f, last = self.factor()
                v = _mul(v, f)
            else:
                return v

    def factor(self) -> tuple[Value, str]:
        v, kind = self.primary()
        if self.at("^"):
            self.take()
            v = _pow(v, self.exponent())
            kind = "pow"
        return v, kind

    def exponent(self) -> int:
        t = self.take()
        if t[0] == "num":
            if len(t[1]) != 1:  # x^23 is x^2 times 3 in LaTeX: leave it to the full parser
                raise _Refuse
            return int(t[1])
        if t[1] != "{":
            raise _Refuse
        sign = 1
        if self.at("-"):
            self.take()
            sign = -1
        n = self.take()
        if n[0] != "num" or "." in n[1]:
            raise _Refuse
        self.take("}")
        return sign * int(n[1])

    def primary(self) -> tuple[Value, str]:
        kind, text = self.take()
        if kind == "num":
            if self._next_is_num():
                raise _Refuse
            return Fraction(text), "num"
        if kind == "var":
            return SYMBOLIC, "var"
        if text == "(":
            before = self.sums
            v = self.expr()
            self.take(")")
            if self.sums == before:  # (3), (x): math-verify reads 2(3) as 5 and x(3) as a function
                raise _Refuse
            return v, "group"
        if text == "\\pi":
            return math.pi, "pi"
        if text == "\\frac":
            self.take("{")
            a = self.expr()
            self.take("}")
            self.take("{")
            b = self.expr()
            self.take("}")
            return _div(a, b), "frac"
        if text == "\\sqrt":
            self.take("{")
            a = self.expr()
            self.take("}")
            return _sqrt(a), "sqrt"
        raise _Refuse

    def _next_is_num(self) -> bool:
        t = self.peek()
        return t is not None and t[0] == "num"

    def end(self) -> None:
        if self.peek() is not None:
            raise _Refuse


class Parsed:
    """What the subset parser read: ``kind`` is "value", "equation" or "set"."""

    __slots__ = ("kind", "value", "lhs", "rhs", "items")

    def __init__(self, kind: str, value: Value | None = None, lhs: Value | None = None,
                 rhs: Value | None = None, items: list[Value] | None = None) -> None:
        self.kind, self.value, self.lhs, self.rhs, self.items = kind, value, lhs, rhs, items


def _screened(s: str) -> str | None:
    s = normalize(s)
    if not s or screen(s):
        return None
    return s


@lru_cache(maxsize=4096)  # a family's golds are read by two checks, its parent answer by each milestone's
def read(text: str) -> Parsed | None:
    """Read ``text`` (a gold or reference answer) if it lies in the subset, else None."""
    s = _screened(text)
    if s is None:
        return None
    try:
        if s.startswith("\\{"):
            if not s.endswith("\\}"):
                return None
            p = _Parser(_tokens(s[2:-2]))
            items = [p.expr()]
            while p.at(","):
                p.take()
                items.append(p.expr())
            p.end()
            return Parsed("set", items=items)
        p = _Parser(_tokens(s))
        left = p.expr()
        if p.at("="):
            p.take()
            right = p.expr()
            p.end()
            return Parsed("equation", lhs=left, rhs=right)
        p.end()
        return Parsed("value", value=left)
    except (_Refuse, ValueError, ZeroDivisionError, OverflowError):
        return None


def _is_const(v: Value | None) -> bool:
    if v is None or isinstance(v, str):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def schema_ok(text: str, schema: AnswerSchema) -> bool | None:
    """True when the full parser would accept ``text`` as ``schema``; None when unsure."""
    if schema not in (AnswerSchema.NUMBER, AnswerSchema.EXPR, AnswerSchema.EQUATION, AnswerSchema.SET):
        return None
    p = read(text)
    if p is None:
        return None
    if schema is AnswerSchema.NUMBER:
        return True if p.kind == "value" and _is_const(p.value) else None
    if schema is AnswerSchema.EXPR:
        return True if p.kind == "value" else None
    if schema is AnswerSchema.EQUATION:
        return True if p.kind == "equation" else None
    return True if p.kind == "set" else None


def _apart(a: Const, b: Const) -> bool:
    fa, fb = float(a), float(b)
    big = max(abs(fa), abs(fb))
    return big >= 1e-3 and abs(fa - fb) > MARGIN * big


def clearly_not_equivalent(parent: str, gold: str) -> bool:
    """True only when ``answers_equivalent(parent, gold)`` is certainly False (see the module doc)."""
    p = read(parent)
    if p is None or p.kind != "value" or not _is_const(p.value):
        return False
    ref = p.value
    g = read(gold)
    if g is None:
        return False
    if g.kind == "value":
        return _is_const(g.value) and _apart(ref, g.value)  # type: ignore[arg-type]
    if g.kind == "equation":
        return _is_const(g.rhs) and _apart(ref, g.rhs)  # type: ignore[arg-type]
    items = g.items or []
    if not items or not all(_is_const(v) for v in items):
        return False
    if len(items) == 1:
        return _apart(ref, items[0])  # type: ignore[arg-type]
    # two or more elements, pairwise distinct: a set of >= 2 values never equals one value
    return all(_apart(a, b) for k, a in enumerate(items) for b in items[k + 1:])  # type: ignore[arg-type]
