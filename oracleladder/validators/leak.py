r"""Leak rule (paper Appendix S/T): how a milestone's gold answer restates the parent answer.

Levels, in increasing breadth (the paper's three criteria, cumulative):

* ``"strict"``: equal after whitespace normalization (all whitespace removed);
* ``"trivial"``: equal after also stripping braces ``{}``/``\{ \}``, parentheses, brackets,
  ``\left``/``\right``/``\big..`` sizing, LaTeX spacing (``\,``, ``\ ``, ``\;``, ``\!``, ``~``),
  ``$`` and an outer ``\boxed{}`` -- trivial-format equivalents;
* ``"equivalent"``: the verifier cascade accepts them (``answers_equivalent``).

``leak_level`` returns the narrowest level that holds, or None when the gold does not leak.

A text the student is shown states a gold (``stated_gold``) when one of its math pieces leaks it by
the same rule: ``$...$``/``\(...\)``/``\[...\]`` segments, ``\boxed{}``, each side of an ``=``, and
each token with a digit or a backslash; a longer gold is also looked for inside the text as written.
A value the problem itself states leaks nothing. ``prompt_leak`` applies it to each tested
milestone's description and prompt (the problem it quotes aside): neither may state the reference
answer, its correction or the INTEGRATE gold. There the verifier's equivalence is asked only of the
pieces the fast reader reads (``_fast.read``: numbers, fractions, roots, short expressions), where a
restated answer lies; a longer formula of a prompt leaks as written or trivially reformatted (the
parser would spend 5-1000 ms on each, and a sub-goal may well quote an expression equal to the answer).
"""

from __future__ import annotations

import re
from typing import Literal

from oracleladder import verify
from oracleladder.schemas.models import CheckResult, Family, Milestone

from ._fast import clearly_not_equivalent, read
from ._text import problem_text

CHECK = "leak"
CHECK_PROMPT = "prompt_leak"
LeakLevel = Literal["strict", "trivial", "equivalent"]

_SPACING = re.compile(r"\\[,;:!> ]|~|\\q?quad")
_SIZING = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)[lr]?(?![A-Za-z])")
_SUBSTRING_MIN = 4  # golds shorter than this (after normalization) are only matched as whole pieces: "5" is in "15"
_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_TOKEN = re.compile(r"[^\s,;:]+")
_MATHY = re.compile(r"[\d\\]")
_OPERATOR = re.compile(r"[-+*/=^<>]")


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


def leak_level(milestone_gold: str, parent_answer: str, *, equivalence: bool = True) -> LeakLevel | None:
    """``equivalence``: also ask the verifier (else only the strict and trivial levels)."""
    if not milestone_gold.strip() or not parent_answer.strip():
        return None
    if _ws(milestone_gold) == _ws(parent_answer):
        return "strict"
    if _trivial(milestone_gold) and _trivial(milestone_gold) == _trivial(parent_answer):
        return "trivial"
    if not equivalence or clearly_not_equivalent(parent_answer, milestone_gold):  # no LaTeX parser (_fast.py)
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


def leaking_milestones(family: Family) -> list[int]:
    """The leak rule of Appendix N and P.1: the tested milestones whose gold restates the reference
    answer or its correction (``leak_level``), which Stage 0, C2 and C3 leave out (`Family.leaking`)."""
    refs = [a for a in (family.parent_answer, family.parent_answer_corrected) if a]
    return [i for i, m in family.tested(keep_leaking=True)
            if any(leak_level(m.answer, ref) is not None for ref in refs)]


def with_leak_rule(family: Family) -> Family:
    """``family`` with its ``leaking`` milestones found, where no one has found them yet."""
    if family.leaking is None:
        family.leaking = leaking_milestones(family)
    return family


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


def answers(family: Family) -> list[tuple[str, str]]:
    """(what, gold) pairs no text shown to a student may state: the reference answer, its correction,
    the INTEGRATE gold."""
    out = [("the reference answer", family.parent_answer)]
    if family.parent_answer_corrected:
        out.append(("the corrected reference answer", family.parent_answer_corrected))
    if family.integrate is not None:
        out.append(("the INTEGRATE gold", family.integrate.answer))
    return [(what, g) for what, g in out if g.strip()]


def _given(gold: str, problem_pieces: list[str]) -> bool:
    """The problem itself states the value (as written, up to trivial reformatting)."""
    return _trivial(gold) in {_trivial(p) for p in problem_pieces}


def stated_gold(text: str, family: Family, golds: list[tuple[str, str]], *,
                every_piece: bool = True) -> tuple[str, str, str] | None:
    """(what, gold, piece) for the first of ``golds`` the text states, or None. ``every_piece``: ask
    the verifier's equivalence of every piece (else of those the fast reader reads)."""
    found = _pieces(text)
    flat = _trivial(text)
    problem, problem_flat = _pieces(family.parent_prompt), _trivial(family.parent_prompt)
    for what, gold in golds:
        if _given(gold, problem):
            continue
        norm = _trivial(gold)
        # inside a longer text only where the problem does not hold it too: a sub-goal restating the
        # problem's x^2-1001x+250000=0 states no answer 1001
        if len(norm) >= _SUBSTRING_MIN and norm in flat and norm not in problem_flat:
            return what, gold, gold
        for piece in found:
            if leak_level(piece, gold, equivalence=every_piece or read(piece) is not None) is not None:
                return what, gold, piece
    return None


def shown_text(m: Milestone, family: Family) -> str:
    """What a student is shown of a milestone besides the problem: its description and its prompt
    without the problem it quotes (when that is the family's own)."""
    prompt, quoted = m.prompt, problem_text(m).strip()
    if quoted and quoted in family.parent_prompt:
        prompt = prompt.replace(quoted, " ")
    return f"{m.description or ''}\n{prompt}"


def check_prompt_leak(m: Milestone, family: Family, index: int | None = None) -> CheckResult:
    hit = stated_gold(shown_text(m, family), family, answers(family), every_piece=False)
    if hit is None:
        return CheckResult(check=CHECK_PROMPT, passed=True, milestone=index,
                           reason="the prompt and description state no final answer")
    what, gold, piece = hit
    return CheckResult(check=CHECK_PROMPT, passed=False, milestone=index,
                       reason=f"the milestone's prompt or description states {what} ({piece!r} is {gold!r} or an "
                              "equivalent form); a student shown it is told the answer: state the sub-goal only")
