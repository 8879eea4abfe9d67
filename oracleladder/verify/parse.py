"""One deterministic parser per answer schema, on top of math-verify's LaTeX parser."""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

import sympy
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

from oracleladder.schemas.types import AnswerSchema

from .latex import sll_first
from .normalize import mcq_letter, normalize
from .screen import screen

# math-verify warns on every call that its own timeout is off; ours is the worker kill.
logging.getLogger("math_verify").setLevel(logging.ERROR)

_CONFIG = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
_ASSIGN = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?)\s*=(?!=)\s*(.+)$", re.S)
_REL = re.compile(r"\\le|\\ge|\\lt|\\gt|<|>|\\ne")


class ParseError(ValueError):
    pass


def split_top(s: str, seps: str = ",;") -> list[str]:
    """Split on separators outside any bracket; also on the words `and` / `or`."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    out: list[str] = []
    for p in parts:
        out.extend(re.split(r"\s+(?:and|or)\s+|\\quad|\\qquad", p))
    return [p.strip() for p in out if p.strip()]


def as_assignment(s: str) -> tuple[str, str] | None:
    """`x_1 = 15/2` -> ("x_1", "15/2"); None when `s` is not a single-name labelled value."""
    m = _ASSIGN.match(s)
    if not m or _REL.search(m.group(2)) or "=" in m.group(2):
        return None
    return m.group(1).replace("{", "").replace("}", ""), m.group(2)


def is_ordered_tuple(s: str) -> bool:
    t = s.strip()
    return t.startswith("(") and t.endswith(")") and len(split_top(t[1:-1], ",")) > 1 and _balanced_outer(t)


def _balanced_outer(t: str) -> bool:
    depth = 0
    for i, c in enumerate(t):
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and i < len(t) - 1:
            return False
    return True


@lru_cache(maxsize=4096)  # golds repeat across a family's responses; parsing dominates the cost
def sym(text: str) -> Any:
    """Parse one LaTeX answer to SymPy; raise ParseError when math-verify finds nothing."""
    why = screen(text)
    if why:
        raise ParseError(why)
    # timeouts are enforced by killing the worker process; SIGALRM would break off the main thread
    with sll_first():
        res = parse(f"${text}$", extraction_config=_CONFIG, parsing_timeout=None)
    if not res:
        raise ParseError(f"cannot parse {text!r}")
    return res[0]


def parse_answer(text: str, schema: AnswerSchema) -> Any:
    """Parse `text` as `schema`; the shape check makes a mis-declared gold fail loudly."""
    s = normalize(text)
    if schema is AnswerSchema.MCQ_STRING:
        letter = mcq_letter(s)
        if letter is None:
            raise ParseError(f"not an option letter: {text!r}")
        return letter
    if schema is AnswerSchema.TUPLE_LIST:
        parts = split_top(s, ",;") if not is_ordered_tuple(s) else [s]
        return [sympy.Tuple(*[sym(x) for x in split_top(p.strip()[1:-1], ",")]) if is_ordered_tuple(p) else sym(p) for p in parts]
    if schema is AnswerSchema.EQUATION:
        eqs = [sym(p) for p in split_top(s)]
        if not all(isinstance(e, sympy.Eq) for e in eqs):
            raise ParseError(f"not an equation: {text!r}")
        return eqs
    obj = sym(s)
    checks = {
        AnswerSchema.NUMBER: lambda o: isinstance(o, sympy.Basic) and not o.free_symbols and not isinstance(o, (sympy.Set, sympy.Tuple)),
        AnswerSchema.EXPR: lambda o: isinstance(o, sympy.Basic),
        AnswerSchema.INEQUALITY: lambda o: isinstance(o, (sympy.core.relational.Relational, sympy.Set, sympy.And, sympy.Or)),
        AnswerSchema.SET: lambda o: isinstance(o, (sympy.Set, sympy.Tuple)),
        AnswerSchema.INTERVAL: lambda o: isinstance(o, (sympy.Interval, sympy.Union, sympy.Set)),
        AnswerSchema.MATRIX_VECTOR: lambda o: isinstance(o, (sympy.MatrixBase, sympy.Tuple)),
    }
    if not checks[schema](obj):
        raise ParseError(f"{text!r} does not parse as {schema.value}")
    return obj


def infer_schema(gold: str) -> AnswerSchema:
    """Best-effort guess of a gold answer's schema from its surface form."""
    s = normalize(gold)
    if mcq_letter(s) and len(s) <= 3:
        return AnswerSchema.MCQ_STRING
    if "\\begin{" in s and "matrix" in s:
        return AnswerSchema.MATRIX_VECTOR
    if re.fullmatch(r"-?\d+(?:\.\d+)?|-?\\frac\{\d+\}\{\d+\}|\d{1,3}(?:,\d{3})+", s):
        return AnswerSchema.NUMBER
    if "\\cup" in s or re.fullmatch(r"[\[(][^,()\[\]]*,[^,()\[\]]*[\])]", s) and (s[0] == "[" or s[-1] == "]"):
        return AnswerSchema.INTERVAL
    if is_ordered_tuple(s) or re.match(r"^\(.*\)\s*,\s*\(", s):
        return AnswerSchema.TUPLE_LIST
    if s.startswith("\\{") or s.startswith("{"):
        return AnswerSchema.SET
    if _REL.search(s):
        return AnswerSchema.INEQUALITY
    if "=" in s:
        return AnswerSchema.EQUATION
    return AnswerSchema.EXPR
