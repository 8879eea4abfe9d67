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

from .leak import _trivial, leak_level
from .standalone import references_other

CHECK_LEAK = "primitive_leak"
CHECK_ARITHMETIC = "primitive_arithmetic"
CHECK_LENGTH = "primitive_length"
CHECK_STANDALONE = "primitive_standalone"
CHECKS = (CHECK_LEAK, CHECK_ARITHMETIC, CHECK_LENGTH, CHECK_STANDALONE)
MIN_WORDS = 3
MAX_WORDS = 60
_SUBSTRING_MIN = 4  # golds shorter than this (after normalization) are only matched as whole pieces: "5" is in "15"

_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_TOKEN = re.compile(r"[^\s,;:]+")
_MATHY = re.compile(r"[\d\\]")
_OPERATOR = re.compile(r"[-+*/=^<>]")
_NUMBER = r"-?\d[\d,]*(?:\.\d+)?|-?\\[dt]?frac\s*\{-?\d+\}\s*\{\d+\}|-?\d+\s*/\s*\d+"
_RESULT = re.compile(rf"(?:=|\\approx|≈|\bequals?\b|\bis equal to\b)\s*\$?\s*({_NUMBER})", re.I)


def _pieces(text: str) -> list[str]:
    """The math pieces of a text: segments, boxed content, the sides of '=', math-looking tokens; in a
    fixed order (a set's order changes between processes, and the re-ask quoting a piece must not)."""
    segments = [next(g for g in m.groups() if g is not None) for m in _SEGMENT.finditer(text)]
    segments += _BOXED.findall(text)
    prose = _SEGMENT.sub(" ", text)
    tokens = [t.strip(".!?'\"") for t in _TOKEN.findall(prose)]
    out = set(segments) | {t for t in tokens if _MATHY.search(t)}
    run: list[str] = []
    for t in [*tokens, ""]:  # runs of math tokens written with spaces: "1.8 \cdot 10^2"
        if t and (_MATHY.search(t) or _OPERATOR.fullmatch(t)):
            run.append(t)
            continue
        if len(run) > 1:
            out.add(" ".join(run))
        run = []
    for piece in list(out):
        out.update(side for side in piece.split("=") if side.strip())
    out.update(side for side in prose.split("=")[1:] if len(side.split()) <= 3)  # "... is x = 1/2"
    return sorted({p.strip().strip(".") for p in out if p.strip().strip(".")}, key=lambda p: (len(p), p))


def golds(family: Family) -> list[tuple[str, str]]:
    """(what, gold) pairs a primitive must not state: the reference answer and its correction, the
    INTEGRATE gold and every milestone's gold."""
    out = [("the reference answer", family.parent_answer)]
    if family.parent_answer_corrected:
        out.append(("the corrected reference answer", family.parent_answer_corrected))
    if family.integrate is not None:
        out.append(("the INTEGRATE gold", family.integrate.answer))
    out += [(f"milestone {i + 1}'s gold", m.answer) for i, m in enumerate(family.milestones)]
    return [(what, g) for what, g in out if g.strip()]


def _given(gold: str, problem_pieces: list[str]) -> bool:
    """The problem itself states the value (as written, up to trivial reformatting)."""
    return _trivial(gold) in {_trivial(p) for p in problem_pieces}


def stated_gold(text: str, family: Family) -> tuple[str, str, str] | None:
    """(what, gold, piece) for the first gold the text states, or None."""
    pieces = _pieces(text)
    flat = _trivial(text)
    problem = _pieces(family.parent_prompt)
    for what, gold in golds(family):
        if _given(gold, problem):
            continue
        norm = _trivial(gold)
        if len(norm) >= _SUBSTRING_MIN and norm in flat:
            return what, gold, gold
        for piece in pieces:
            if leak_level(piece, gold) is not None:
                return what, gold, piece
    return None


def check_leak(text: str, family: Family) -> CheckResult:
    hit = stated_gold(text, family)
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
