"""Answer equivalence: the strict cascade and the extended rules, shared by grading and leak checks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import sympy
from math_verify import parse as mv_parse, verify as mv_verify
from math_verify.grader import is_assignment_relation, is_equation, take_last_relation

from . import exact
from .extract import BOXES_READ
from .latex import sll_first
from .normalize import math_strip, mcq_letter, normalize, strip_thousands
from .parse import ParseError, as_assignment, is_ordered_tuple, split_top, sym
from .screen import screen

_OPTION = re.compile(r"\(([A-E])\)\s*(.+?)(?=\s*\([A-E]\)|$)", re.S)


_PROBES = (sympy.Rational(37, 100), sympy.Rational(113, 100), sympy.Rational(29, 10))


def _gaps(g: Any, p: Any, floor: float, max_symbols: int) -> Iterator[bool]:
    """At each probe point in turn: are the values of `g` and `p` far apart there, by a relative gap
    over 5% (loose, to leave rounded decimals to math-verify) and over `floor`? False where either
    cannot be evaluated or is not a finite real. Nothing for objects that are not expressions."""
    if not all(isinstance(x, sympy.Expr) for x in (g, p)):
        return
    syms = tuple(sorted(g.free_symbols | p.free_symbols, key=str))
    if len(syms) > max_symbols:
        return
    for k in range(len(_PROBES)):
        a = _probe_value(g, syms, k)
        b = _probe_value(p, syms, k) if a is not None else None
        if a is None or b is None or a.imag or b.imag or not all(z == z and abs(z) != float("inf") for z in (a, b)):
            yield False
        else:
            yield abs(a - b) > 0.05 * max(abs(a), abs(b)) + floor


def _clearly_different(g: Any, p: Any) -> bool:
    """Numeric disproof before symbolic proof, the cascade's own rule: far apart at every probe point.

    math-verify's simplify() dominates grading time and most wrong answers are far off."""
    probed = False
    for apart in _gaps(g, p, 1e-9, 4):  # in order, stopping at the first probe that does not disprove
        if not apart:
            return False
        probed = True
    return probed


@lru_cache(maxsize=8192)  # a gold is probed once per set of symbols, not once per answer
def _probe_value(expr: sympy.Expr, syms: tuple[sympy.Symbol, ...], k: int) -> complex | None:
    """`expr` at the k-th probe point (the i-th symbol by name at probe + i); None where it cannot be evaluated.
    Substituted inside evalf, not before it: the same value without building the substituted expression."""
    try:
        return complex(expr.evalf(15, subs={s: _PROBES[k] + i for i, s in enumerate(syms)}))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None


def _elements(o: Any) -> list[Any]:
    """A finite set's or a tuple's elements; any other object is its own single element."""
    return list(o.args) if isinstance(o, (sympy.FiniteSet, sympy.Tuple)) else [o]


def _numeric(o: Any) -> bool:
    """An expression math-verify compares by value: not a lone symbol (compared by name), a percentage
    (compared by its digits) or a matrix."""
    return (isinstance(o, sympy.Expr) and not isinstance(o, (sympy.Symbol, sympy.MatrixExpr))
            and not o.has(sympy.UnevaluatedExpr))


def _apart(g: Any, p: Any) -> bool:
    """Can math-verify not find these two parsed answers equal? Yes when, once it has unwrapped a
    labelled value as it does (gold `x = 3` against 3 compares 3), one value of one side (an
    expression, or an element of a finite set or tuple) is far apart from every value of the other
    at some probe point: more than 5% and more than its 6-place rounding. Its symbolic proof cannot
    hold where two values differ, and it matches sets and tuples element by element, so this rejects
    before its simplify() or its set comparison runs. Only where every value is `_numeric`."""
    if not all(isinstance(x, sympy.Basic) for x in (g, p)):
        return False
    if is_equation(p) and not is_equation(g):
        p = take_last_relation(p).rhs
    elif is_assignment_relation(g) and not is_equation(p):
        g = take_last_relation(g).rhs
    gs, ps = _elements(g), _elements(p)
    if not all(map(_numeric, gs + ps)):
        return False

    def far(a: Any, b: Any) -> bool:
        return any(_gaps(a, b, 2e-6, 12))

    try:
        return (any(all(far(a, b) for b in ps) for a in gs)
                or any(all(far(a, b) for a in gs) for b in ps))
    except Exception:  # noqa: BLE001 - math-verify would swallow it too: no disproof, its comparison decides
        return False


def _mv(g: Any, p: Any) -> bool:
    # the first is the cascade's own rule (it rejects a symbol math-verify would match by name);
    # the second rejects only what math-verify would reject too, past the first's limits
    if _clearly_different(g, p) or _apart(g, p):
        return False
    return bool(mv_verify(g, p, timeout_seconds=None))


def _to_set(o: Any) -> sympy.Set | None:
    """Solution set over the reals of an inequality, interval or union; None for other objects."""
    if isinstance(o, sympy.Set) and not isinstance(o, sympy.FiniteSet):
        return o
    if isinstance(o, (sympy.core.relational.Relational, sympy.And, sympy.Or)) and not isinstance(o, sympy.Eq):
        syms = o.free_symbols
        if len(syms) == 1:
            try:
                return o.as_set()
            except Exception:  # as_set raises on relations it cannot solve
                return None
    return None


def _eq_diff(o: sympy.Eq) -> Any:
    return sympy.simplify(o.lhs - o.rhs)


def _expr_eq(o: Any) -> bool:
    """An equation between two expressions (not `(x, y) = \\{1, 2\\}`, whose sides do not subtract)."""
    return isinstance(o, sympy.Eq) and all(isinstance(side, sympy.Expr) for side in o.args)


def _atom_extended(g: Any, p: Any) -> bool:
    """Extended rules on two parsed single answers."""
    if _expr_eq(g) and _expr_eq(p):
        dg, dp = _eq_diff(g), _eq_diff(p)
        if dp != 0 and dg != 0:
            ratio = sympy.simplify(dg / dp)
            if not ratio.free_symbols and ratio != 0:
                return True  # same equation up to rearrangement or a constant factor
    for a, b in ((g, p), (p, g)):
        if isinstance(a, sympy.Eq) and isinstance(a.lhs, sympy.Symbol) and not isinstance(b, sympy.Eq):
            if _mv(a.rhs, b) if a is g else _mv(b, a.rhs):
                return True  # labelled value against a bare value
    sg, sp = _to_set(g), _to_set(p)
    if sg is not None and sp is not None:
        try:
            return bool(sympy.simplify(sg.symmetric_difference(sp)) == sympy.S.EmptySet)
        except Exception:
            return False
    return False


_DISJUNCTION = re.compile(r"\\text\{\s*or\s*\}|\\lor|\\vee|\bor\b")


def _sym_extended(s: str) -> Any:
    """Parse, reading `x<1 or x>2` as the disjunction of its parts (a union of solution sets).

    Only relations are joined: `4 or 9/4` is a list of values, handled as a compound answer.
    """
    parts = [x for x in _DISJUNCTION.split(s) if x.strip()]
    if len(parts) > 1:
        parsed = [sym(x) for x in parts]
        if all(isinstance(x, sympy.core.relational.Relational) for x in parsed):
            return sympy.Or(*parsed)
    return sym(s)


def _atom(g: str, p: str, extended: bool) -> bool:
    if normalize(g) == normalize(p):
        return True
    if extended:
        g, p = strip_thousands(g), strip_thousands(p)
    decided = exact.decide(g, p)
    if decided is not None:
        return decided
    parse = _sym_extended if extended else sym
    try:
        pg, pp = parse(g), parse(p)
    except ParseError:
        return False
    if _mv(pg, pp):
        return True
    return extended and _atom_extended(pg, pp)


def _parts(s: str) -> list[str]:
    t = s.strip()
    if is_ordered_tuple(t):
        return split_top(t[1:-1], ",")
    return split_top(t)


def _match_parts(gp: list[str], pp: list[str], ordered: bool, extended: bool) -> bool:
    if len(gp) != len(pp):
        return False
    ga = [as_assignment(x) for x in gp]
    pa = [as_assignment(x) for x in pp]
    if all(ga) and all(pa):
        gd, pd = dict(ga), dict(pa)  # type: ignore[arg-type]
        if set(gd) == set(pd):  # same names: match by variable name
            return all(_atom(gd[k], pd[k], extended) for k in gd)
        if set(gd) & set(pd):
            return False  # some names shared, some not: a different variable
        # disjoint names (x_1 vs x): fall through to matching values by position
    labelled_both = all(ga) and all(pa)
    gv = [a[1] if a else x for a, x in zip(ga, gp)] if extended or labelled_both else gp
    pv = [a[1] if a else x for a, x in zip(pa, pp)] if extended or labelled_both else pp
    if ordered:
        return all(_atom(a, b, extended) for a, b in zip(gv, pv))
    left = list(pv)  # unordered list: greedy one-to-one matching
    for a in gv:
        hit = next((i for i, b in enumerate(left) if _atom(a, b, extended)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def _mcq_value(letter: str, problem: str) -> str | None:
    for m in _OPTION.finditer(problem):
        if m.group(1) == letter:
            return m.group(2).strip().rstrip(".;,").strip("$ ")
    return None


_LABELLED_TUPLE = re.compile(r"^\((.+?)\)\s*=\s*(\(.+\))$", re.S)


def _unpack_labelled_tuple(s: str) -> str:
    """`(x, y) = (7.5, 12.5)` -> `x=7.5, y=12.5`, so it is graded as labelled values in order."""
    m = _LABELLED_TUPLE.match(s.strip())
    if not m or not is_ordered_tuple(m.group(2)):
        return s
    names, values = split_top(m.group(1), ","), split_top(m.group(2).strip()[1:-1], ",")
    if len(names) != len(values) or not all(re.fullmatch(r"[A-Za-z](?:_\{?\w+\}?)?'?", n) for n in names):
        return s
    return ", ".join(f"{n}={v}" for n, v in zip(names, values))


_INT_SET = r"(?:\\mathbb\s*)?\{?\s*[NZ]\s*\}?(?:\s*[\^_]\s*\{?\s*(?:\+|\*|0)\s*\}?)?"
_DOMAIN = re.compile(
    r"^(?P<rel>.+?)\s*[,;]?\s*\(?\s*(?:(?:for|where|with)\s+(?:(?:any|all|some|every|each|an?)\s+)?)?"
    r"(?:(?:non-?negative|positive|nonzero)\s+)?(?P<word>integers?|natural\s+numbers?)?\s*(?P<var>[a-z])\s*"
    r"(?P<dom>\\in\s*" + _INT_SET + r"|\\ge\s*[01]|>\s*0)?\s*\)?$", re.S)
_RELATION = re.compile(r"\\ne|\\le|\\ge|=|<|>")


def drop_integer_domain(s: str) -> str:
    """`n\\ne2^{k}(k\\in{N})`, `n \\ne 2^k for any integer k \\ge 0` -> the condition alone.

    Only a parameter ranging over the integers or naturals is dropped (the two spellings of N,
    with or without 0, are not told apart); any other domain stays, so the answer stays unparsed.
    """
    m = _DOMAIN.match(s)
    if not m or not (m["word"] or (m["dom"] or "").startswith("\\in")):
        return s
    rel = m["rel"]
    if not _RELATION.search(rel) or not re.search(rf"(?<![A-Za-z\\]){m['var']}(?![A-Za-z])", rel):
        return s
    return rel.strip()


@lru_cache(maxsize=4096)  # the K answers to a prompt often agree: a process decides each pair once
def equivalent(gold: str, pred: str, *, extended: bool, problem: str = "") -> bool:
    """Is `pred` (a bare answer) the gold answer? Order counts where the gold is ordered."""
    g, p = drop_integer_domain(normalize(gold)), drop_integer_domain(normalize(pred))
    if not g or not p:
        return False
    if g == p:
        return True
    gl = mcq_letter(g)
    if gl is not None and (len(g) <= 3 or g.startswith("(")):
        pl = mcq_letter(p)
        if pl is not None:
            return pl == gl
        if extended and problem:
            value = _mcq_value(gl, problem)
            return value is not None and _atom(value, p, extended)
        if len(g) <= 3:
            return False
        g = g[g.index(")") + 1:].strip()  # gold like "(C) 3.15 m": grade the value
    p = _unpack_labelled_tuple(p)
    gp, pp = _parts(g), _parts(p)
    ordered = is_ordered_tuple(g) or (len(gp) > 1 and all(as_assignment(x) for x in gp))
    if len(gp) > 1 or len(pp) > 1:
        if _match_parts(gp, pp, ordered, extended):
            return True
        if ordered:
            return False  # math-verify compares tuples and assignment lists as sets; order must count here
    return _atom(g, p, extended)


# Marks of a gold with several values: a list, a relation or system, a set, an interval, a union,
# a case split (`or`, `\pm`, cases), an option letter's text. Broad on purpose: a false mark costs
# only the compound loop's time.
_SEVERAL = re.compile(r"[,;=<>&]|\\[{\\]|\\(?:le|ge|ne|lt|gt|in|ni|cup|cap|setminus|subset|supset|land|lor"
                      r"|wedge|vee|quad|qquad|pm|mp|begin)|\b(?:or|and)\b")


def _has_several(gold: str) -> bool:
    g = normalize(gold)
    return mcq_letter(g) is not None or bool(_SEVERAL.search(g))


def _reads_as_list(boxes: list[str]) -> bool:
    """Do these normalized boxes, joined as `equivalent` reads a join, say nothing but the list of
    their own parts? Not when a domain clause in the last is dropped (`n=2^k`, `k \\in N`), when they
    form a labelled tuple or brackets open in one box and close in another, or a box is empty."""
    p = _unpack_labelled_tuple(drop_integer_domain(normalize(", ".join(boxes))))
    own = [split_top(b) for b in boxes]
    return all(own) and split_top(p) == [part for parts in own for part in parts]


def compound_answers(gold: str, boxes: list[str]) -> list[tuple[int, str]]:
    """The last k = 2..6 boxes joined, (k, joined), wherever the join can be the gold when the last
    box alone is not: for a gold of several values every join; for a single value only a join that
    reads as more than the list of its boxes (a list of two or more values is a single value only if
    each of its values is, the last box's included)."""
    several = _has_several(gold)
    normal = [normalize(b) for b in boxes[-BOXES_READ:]]
    joins = [normal[-k:] for k in range(2, len(normal) + 1)]
    return [(len(j), ", ".join(j)) for j in joins if several or not _reads_as_list(j)]


_PAPER_THOUSANDS = re.compile(r"(\d),(\d{3})")
_PAPER_LABEL = re.compile(r"^[a-zA-Z_]\w*\s*=\s*")


def _paper_form(s: str) -> str:
    """The release's text form for math-verify: thousands commas out, `;` as `,`, one leading
    `name =` label dropped (so `x = 3` is 3, and `x = 1, y = 2` loses only its first label)."""
    return _PAPER_LABEL.sub("", _PAPER_THOUSANDS.sub(r"\1\2", s.strip()).replace(";", ","))


@lru_cache(maxsize=4096)  # as `equivalent`
def paper_equivalent(gold: str, pred: str) -> bool:
    """The release's default cascade on a bare answer: MATH's `is_equiv` string match, else
    math-verify's own comparison of the two parsed answers (tuples and lists compared as it
    compares them, no MCQ option values, no compound answers, no Unicode math)."""
    g, p = math_strip(gold), math_strip(pred)
    if g and g == p:
        return True
    g, p = _paper_form(gold), _paper_form(pred)
    if screen(g) or screen(p):
        return False
    decided = exact.decide(g, p)
    if decided is not None:
        return decided
    pg, pp = _boxed_parse(g), _boxed_parse(p)
    apart = len(pg) == len(pp) == 2 and pg[1] != pp[1] and _apart(pg[0], pp[0])  # (object, text) each
    return bool(pg and pp and not apart and mv_verify(pg, pp, timeout_seconds=None))


@lru_cache(maxsize=4096)  # a gold is parsed once per process, as parse.sym does for the other graders
def _boxed_parse(s: str) -> list[Any]:
    """math-verify's own reading of `\\boxed{s}` (its objects and their text), as the release's cascade reads it."""
    # timeouts are the worker's kill (see parse.sym); SIGALRM would break off the main thread
    with sll_first():
        return mv_parse("\\boxed{" + s + "}", parsing_timeout=None)
