r"""Leak rule (paper Appendix S/T): how a milestone's gold answer restates the parent answer.

Levels, in increasing breadth (the paper's three criteria, cumulative):

* ``"strict"``: equal after whitespace normalization (all whitespace removed);
* ``"trivial"``: equal after also stripping braces ``{}``/``\{ \}``, parentheses, brackets,
  ``\left``/``\right``/``\big..`` sizing, LaTeX spacing (``\,``, ``\ ``, ``\;``, ``\!``, ``~``),
  ``$`` and an outer ``\boxed{}`` -- trivial-format equivalents;
* ``"equivalent"``: the verifier cascade accepts them (``answers_equivalent``).

``leak_level`` returns the narrowest level that holds, or None when the gold does not leak.
"""

from __future__ import annotations

import re
from typing import Literal

from oracleladder import verify
from oracleladder.schemas.models import CheckResult, Milestone

from ._fast import clearly_not_equivalent

CHECK = "leak"
LeakLevel = Literal["strict", "trivial", "equivalent"]

_SPACING = re.compile(r"\\[,;:!> ]|~|\\q?quad")
_SIZING = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)[lr]?(?![A-Za-z])")


def _ws(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _trivial(s: str) -> str:
    s = s.strip().strip("$")
    s = re.sub(r"\\boxed\s*", "", s)
    s = _SIZING.sub("", s)
    s = _SPACING.sub("", s)
    s = s.replace("\\{", "").replace("\\}", "")
    s = re.sub(r"[{}()\[\]]", "", s)
    return _ws(s)


def leak_level(milestone_gold: str, parent_answer: str) -> LeakLevel | None:
    if not milestone_gold.strip() or not parent_answer.strip():
        return None
    if _ws(milestone_gold) == _ws(parent_answer):
        return "strict"
    if _trivial(milestone_gold) and _trivial(milestone_gold) == _trivial(parent_answer):
        return "trivial"
    if clearly_not_equivalent(parent_answer, milestone_gold):  # no LaTeX parser needed (_fast.py)
        return None
    try:
        if verify.answers_equivalent(parent_answer, milestone_gold, extended=True):
            return "equivalent"
    except Exception:  # noqa: BLE001 - a verifier crash is not evidence of a leak
        return None
    return None


def check_leak(m: Milestone, parent_answer: str, index: int | None = None) -> CheckResult:
    level = leak_level(m.answer, parent_answer)
    if level is None:
        return CheckResult(check=CHECK, passed=True, milestone=index, reason="gold does not restate the parent answer")
    how = {"strict": "is identical to", "trivial": "is a trivial reformatting of",
           "equivalent": "is verifier-equivalent to"}[level]
    return CheckResult(check=CHECK, passed=False, milestone=index,
                       reason=f"leak ({level}): gold {m.answer!r} {how} the parent answer {parent_answer!r}; "
                              "the milestone must leave a real step before the parent answer")
