r"""Checks of a family's primitive (docs/primitive.md): the key idea, never a value.

* ``primitive_leak``: it states neither the reference answer (nor its correction, nor the INTEGRATE
  gold) nor any milestone gold, by the leak rule's equivalence (``leak.leak_level``: identical, a
  trivial reformatting, or verifier-equivalent: ``1/2`` = ``0.5`` = ``\frac{1}{2}``). Every math
  piece of the text is compared: ``$...$``/``\(...\)``/``\[...\]`` segments, ``\boxed{}``, each
  side of an ``=``, and each token with a digit or a backslash; a longer gold is also looked for
  inside the text as written. A value the problem itself states leaks nothing and is let through.
* ``primitive_arithmetic``: no result statement such as ``= 12`` or ``equals 3/4`` (unless the
  problem states it);
* ``primitive_length``: between ``MIN_WORDS`` and ``MAX_WORDS`` words, one short statement;
* ``primitive_standalone``: the standalone rule's back-reference check (standalone.py): it does not
  point at milestones, steps or earlier results.
"""

from __future__ import annotations

import re

from oracleladder.schemas.models import CheckResult, Family

from .leak import _trivial, answers, stated_gold
from .standalone import references_other

CHECK_LEAK = "primitive_leak"
CHECK_ARITHMETIC = "primitive_arithmetic"
CHECK_LENGTH = "primitive_length"
CHECK_STANDALONE = "primitive_standalone"
CHECKS = (CHECK_LEAK, CHECK_ARITHMETIC, CHECK_LENGTH, CHECK_STANDALONE)
MIN_WORDS = 3
MAX_WORDS = 60

_NUMBER = r"-?\d[\d,]*(?:\.\d+)?|-?\\[dt]?frac\s*\{-?\d+\}\s*\{\d+\}|-?\d+\s*/\s*\d+"
_RESULT = re.compile(rf"(?:=|\\approx|≈|\bequals?\b|\bis equal to\b)\s*\$?\s*({_NUMBER})", re.I)


def golds(family: Family) -> list[tuple[str, str]]:
    """(what, gold) pairs a primitive must not state: the reference answer and its correction, the
    INTEGRATE gold and every milestone's gold."""
    return answers(family) + [(f"milestone {i + 1}'s gold", m.answer) for i, m in enumerate(family.milestones)
                              if m.answer.strip()]


def check_leak(text: str, family: Family, *, final_only: bool = False) -> CheckResult:
    """``final_only``: the final answers alone (`leak.answers`), not the milestones' golds: what a gold
    primitive, written by hand beside the roadmap, may not state."""
    hit = stated_gold(text, family, answers(family) if final_only else golds(family))
    if hit is None:
        return CheckResult(check=CHECK_LEAK, passed=True, reason="states no gold answer")
    what, gold, piece = hit
    return CheckResult(check=CHECK_LEAK, passed=False,
                       reason=f"the primitive states {what} ({piece!r} is {gold!r} or an equivalent form); "
                              "give the idea the solution turns on, never a value it reaches")


def check_arithmetic(text: str, family: Family) -> CheckResult:
    problem = _trivial(family.parent_prompt)
    for m in _RESULT.finditer(text):
        if _trivial(m.group(0)) not in problem:
            return CheckResult(check=CHECK_ARITHMETIC, passed=False,
                               reason=f"the primitive states a computed result ({m.group(0).strip()!r}); "
                                      "say what to do, not what it comes to")
    return CheckResult(check=CHECK_ARITHMETIC, passed=True, reason="states no computed result")


def check_length(text: str) -> CheckResult:
    words = len(text.split())
    if MIN_WORDS <= words <= MAX_WORDS:
        return CheckResult(check=CHECK_LENGTH, passed=True, reason=f"{words} words")
    return CheckResult(check=CHECK_LENGTH, passed=False,
                       reason=f"the primitive has {words} words; it must be one short statement of "
                              f"{MIN_WORDS} to {MAX_WORDS} words")


def check_standalone(text: str) -> CheckResult:
    hit = references_other(text)
    if hit:
        return CheckResult(check=CHECK_STANDALONE, passed=False,
                           reason=f"the primitive refers to another step ({hit!r}); it is shown without the "
                                  "roadmap, so it must make sense with the problem alone")
    return CheckResult(check=CHECK_STANDALONE, passed=True, reason="no reference to other steps")


def check_primitive(text: str, family: Family) -> list[CheckResult]:
    """Every check of a primitive ``text`` for ``family`` (family-level results: ``milestone`` is None)."""
    return [check_leak(text, family), check_arithmetic(text, family), check_length(text), check_standalone(text)]
