r"""Reference-answer check: the answer every response is graded against must be usable.

A released reference answer can be truncated or garbled (``\1``, ``x_1=x_2=``, ``15to25``,
``0\leqslant|+b|\leqslant2``, a dangling ``n=1,``); each response to such a family would be
graded against garbage. A reference answer (or a corrected one) must therefore pass the
milestone golds' atomicity rules, and must not look cut off:

* it does not start with a relation (the left side is missing: ``=2,b=1/4``, ``\leqslant-2``);
* it does not end in an operator, relation, separator or bare backslash (``x_1=x_2=``, ``n=1,``);
* every backslash starts a command or an escaped symbol (``\1`` is not LaTeX);
* no operator where an operand was dropped (``|+b|``, ``(*``, ``{=``);
* braces and ``\begin``/``\end`` are balanced;
* no number glued to a word and a number (``15to25``).

The schema parse is not a condition: sound released answers such as ``\operatorname{ctg}``
expressions, an unevaluated ``\sum`` or a chained ``100m+n=2105`` fail the parser, and the
grading cascade still compares them as written.
"""

from __future__ import annotations

import re

from oracleladder.schemas.models import CheckResult, Family

from .atomicity import atomicity_problem

CHECK = "reference_answer"

_REL = r"=|<|>|\\(?:le|ge|leq|geq|leqslant|geqslant|ne|neq|lt|gt)(?![A-Za-z])"
_LEADING_REL = re.compile(rf"^(?:{_REL})")
_TRAILING = re.compile(rf"(?:{_REL}|[,;+\-*/^_&\\]|\\(?:cdot|times|div|pm|mp|in|cup|cap|to)(?![A-Za-z]))$")
_ESCAPE = re.compile(r"\\(.)", re.S)  # `\\` (a row break) is consumed as one pair
_ESCAPABLE = set("{}[]()|,;:!$%&#_^ \\<>.'~-")
_DROPPED_OPERAND = re.compile(rf"[(\[]\s*[*/^=]|\{{\s*[*/^=]|(?:^|{_REL}|[(\[{{,+*/])\s*\|\s*[+*/^=]")
_GLUED = re.compile(r"\d(?:to|and|or|till|until)\d")
_SPACES = re.compile(r"(?:\s|\\[,;!: ]|~)+$")


def _braces_balanced(s: str) -> bool:
    depth = 0
    for m in re.finditer(r"\\.|[{}]", s):
        t = m.group(0)
        if t in "{}":
            depth += 1 if t == "{" else -1
            if depth < 0:
                return False
    return depth == 0


def truncation_problem(answer: str) -> str | None:
    """None when `answer` reads as complete, else how it looks cut off or garbled."""
    s = _SPACES.sub("", answer.strip().strip("$").strip())
    if _LEADING_REL.match(s):
        return f"starts with a relation ({s[:12]!r}): its left side is missing"
    m = _TRAILING.search(s)
    if m:
        return f"ends in a dangling {m.group(0)!r}: it is cut off"
    m = next((e for e in _ESCAPE.finditer(s) if not e.group(1).isalpha() and e.group(1) not in _ESCAPABLE), None)
    if m:
        return f"a backslash at {s[m.start():m.start() + 3]!r} starts no LaTeX command: it is garbled"
    m = _DROPPED_OPERAND.search(s)
    if m:
        return f"an operator has no operand at {m.group(0).strip()!r}: part of it is missing"
    if not _braces_balanced(s):
        return "unbalanced braces: it is cut off"
    if re.findall(r"\\begin\{(\w+\*?)\}", s) != re.findall(r"\\end\{(\w+\*?)\}", s):
        return "a \\begin{...} has no matching \\end: it is cut off"
    m = _GLUED.search(s)
    if m:
        return f"words run into numbers ({m.group(0)!r}): it is garbled"
    return None


def answer_problem(answer: str | None) -> str | None:
    """Why a reference answer cannot be graded against, or None when it can."""
    if answer is None or not answer.strip():
        return "reference answer is empty"
    why = truncation_problem(answer) or atomicity_problem(answer)
    return f"reference answer {answer!r}: {why}" if why else None


def reference_answer_problem(family: Family, use_corrections: bool = False) -> str | None:
    """Why the family's reference answer (corrected one with `use_corrections`) is unusable, or None."""
    return answer_problem(family.reference_answer(use_corrections))


def check_reference_answer(family: Family, use_corrections: bool = False) -> CheckResult:
    why = reference_answer_problem(family, use_corrections)
    if why:
        return CheckResult(check=CHECK, passed=False,
                           reason=f"{why}; responses cannot be graded against it, correct the reference answer")
    return CheckResult(check=CHECK, passed=True, reason="reference answer is complete and atomic")
