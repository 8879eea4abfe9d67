"""Plain numbers compared without SymPy: integers, decimals and fractions (`\\frac{a}{b}`, `a/b`),
signed, one of them perhaps labelled (`x_{1} = \\frac{15}{2}`, compared by its value as math-verify
compares a labelled value against a bare one). About a third of real (answer, gold) pairs are two of
them; exact arithmetic decides such a pair in microseconds where parsing and comparing it with math-verify takes milliseconds.

`decide` gives the verdict math-verify's comparison gives on the pair (so every grader keeps its
verdicts: tests/verify/test_exact.py checks it against the cascade on every form and near miss),
and None wherever that comparison's float rounding could go either way: math-verify compares a
decimal to 6 places, in binary floating point."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

_DIGITS = r"\d{1,40}"  # longer runs are screened out (screen.MAX_DIGIT_RUN): never accepted
_PLAIN = re.compile(
    rf"(?P<sign>[-+]?)\s*(?:(?P<int>{_DIGITS})(?:\.(?P<dec>{_DIGITS}))?"
    rf"|\\frac\{{(?P<num>-?{_DIGITS})\}}\{{(?P<den>-?{_DIGITS})\}}|(?P<top>{_DIGITS})/(?P<bottom>{_DIGITS}))")
# a one-letter name, perhaps with a subscript; not e, E, i or I, which math-verify reads as constants
_LABELLED = re.compile(r"\s*(?![eEiI])[A-Za-z](?:_(?:\w|\{\w+\}))?\s*=\s*(?P<value>.*)", re.S)
_FLOAT_EXACT_BELOW = 10**6  # a float's binary rounding error stays far below the 6th decimal here
_APART = Fraction(2, 10**6)  # two values this far apart never round to the same 6th decimal


class Plain(NamedTuple):
    value: Fraction
    decimals: int | None  # digits after a decimal point; None for an integer or a fraction


@lru_cache(maxsize=8192)  # a gold is read once per process
def plain(text: str) -> Plain | None:
    """`text` as a plain number, or None when it is anything else (a fraction over 0 included)."""
    m = _PLAIN.fullmatch(text.strip())
    if m is None:
        return None
    sign = -1 if m["sign"] == "-" else 1
    if m["int"] is not None:
        dec = m["dec"]
        value = Fraction(int(m["int"] + (dec or "")), 10 ** len(dec or ""))
        return Plain(sign * value, len(dec) if dec is not None else None)
    top, bottom = (int(m["num"]), int(m["den"])) if m["num"] is not None else (int(m["top"]), int(m["bottom"]))
    return Plain(sign * Fraction(top, bottom), None) if bottom else None


@lru_cache(maxsize=8192)
def labelled(text: str) -> Plain | None:
    """The plain number in `text` of the form `name = number`, or None."""
    m = _LABELLED.fullmatch(text)
    return plain(m["value"]) if m else None


def decide(gold: str, pred: str) -> bool | None:
    """Is `pred` the number `gold`, as math-verify decides it? None: not two plain numbers (of which
    one may be labelled), or too close to call without math-verify's own float rounding."""
    g, p = plain(gold), plain(pred)
    if g is None and p is not None:
        g = labelled(gold)
    elif p is None and g is not None:
        p = labelled(pred)
    if g is None or p is None:
        return None
    if g.decimals is None and p.decimals is None:
        return g.value == p.value  # integers and fractions: SymPy compares them exactly
    if max(abs(g.value), abs(p.value)) >= _FLOAT_EXACT_BELOW:
        return None
    if g.value == p.value:
        return True if max(g.decimals or 0, p.decimals or 0) <= 6 else None  # on the 6-place grid, or undecided
    return False if abs(g.value - p.value) > _APART else None
