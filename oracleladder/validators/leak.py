r"""Leak rule (paper Appendix S/T): how a milestone's gold answer restates the parent answer.

Levels, in increasing breadth (the paper's three criteria, cumulative):

* ``"strict"``: equal after whitespace normalization (all whitespace removed);
* ``"trivial"``: equal after also stripping braces ``{}``/``\{ \}``, parentheses, brackets,
  ``\left``/``\right``/``\big..`` sizing, LaTeX spacing (``\,``, ``\ ``, ``\;``, ``\!``, ``~``),
  ``$`` and an outer ``\boxed{}`` -- trivial-format equivalents;
* ``"equivalent"``: the verifier cascade accepts them (``answers_equivalent``).

``leak_level`` returns the narrowest level that holds, or None when the gold does not leak.

Conditions (2) and (3) of Appendix T's leak-safe rule, where a program can decide them
(``transformation``, the check ``leak_transform``): a gold that is the parent answer up to a trivial
transformation -- its sign flipped, a unit factor (x100 or /100 where either side says percent; 180/pi
either way where either side says degrees or holds pi), its case answers recombined (the same parts
in another order or grouping: ``\{-1,1\}``, ``x=\pm 1``, ``1 or -1``) -- or the parent answer left one
formatting step away: one side of an equation the gold states, or its decimal rounding (two places or more). Constants are
read by the fast reader (``_fast.read``), exactly where they are rational.

A text the student is shown states a gold (``stated_gold``) when one of its math pieces leaks it by
the same rule: ``$...$``/``\(...\)``/``\[...\]`` segments, ``\boxed{}``, each side of an ``=``, and
each token with a digit or a backslash; a longer gold is also looked for inside the text as written.
A value the problem itself states leaks nothing, nor does a number the problem holds anywhere as a
quantity (the ``7`` of its ``x^7``, not the ``1001`` of its ``-1001x``: a sub-goal restating the
problem's data tells no answer, one giving a coefficient as a result may). A reference answer the
reference check marks unusable (``reference.answer_problem``: the garbled ``x^{2}+y^{2}=1\2``, which
the reader takes for ``1``) is no leak pattern: every ``1`` would state it. ``prompt_leak`` applies it
to each tested milestone's description and prompt (the problem it quotes aside): neither may state the
reference answer, its correction or the INTEGRATE gold. There the verifier's equivalence is asked only of the
pieces the fast reader reads (``_fast.read``: numbers, fractions, roots, short expressions), where a
restated answer lies; a longer formula of a prompt leaks as written or trivially reformatted (the
parser would spend 5-1000 ms on each, and a sub-goal may well quote an expression equal to the answer).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Literal

from oracleladder import verify
from oracleladder.schemas.models import CheckResult, Family, Milestone

from ._fast import clearly_not_equivalent, read
from ._text import problem_text
from .reference import answer_problem

CHECK = "leak"
CHECK_TRANSFORM = "leak_transform"
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
# a quantity as written: whole (the 17 of a text holds no 7), no coefficient (the 1001 of -1001x is a term's)
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?!\d|\.\d|[A-Za-z])")


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


_PERCENT = re.compile(r"%|percent", re.I)
_ANGLE = re.compile(r"\\circ|°|degree|\\pi|radian", re.I)
_CASE_WORD = re.compile(r"\\text\s*\{\s*(or|and)\s*\}|\\(?:cup|lor|vee)(?![A-Za-z])")
_CASE_SEP = re.compile(r",|;|\s(?:or|and)\s")
_PM = re.compile(r"\\pm\s*")


def _const(text: str) -> Fraction | float | None:
    """The value of a constant (an equation's right side: ``x=5``), or None."""
    p = read(text)
    v = p.value if p is not None and p.kind == "value" else p.rhs if p is not None and p.kind == "equation" else None
    return v if isinstance(v, (Fraction, float)) and math.isfinite(float(v)) else None


def _same(a: Fraction | float, b: Fraction | float) -> bool:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _factor(gold: str, answer: str) -> str | None:
    """The trivial factor between two constants: a sign flip or a unit factor, said; None."""
    g, a = _const(gold), _const(answer)
    if g is None or a is None or a == 0 or _same(g, a):
        return None
    factors: list[tuple[Fraction | float, str]] = [(-1, "with its sign flipped")]
    said = gold + " " + answer
    if _PERCENT.search(said):
        factors += [(100, "times 100 (a percent)"), (Fraction(1, 100), "divided by 100 (a percent)")]
    if _ANGLE.search(said):
        factors += [(180 / math.pi, "in degrees (times 180/pi)"), (math.pi / 180, "in radians (times pi/180)")]
    for f, how in factors:
        for sign, word in ((1, ""), (-1, ", sign flipped")):
            if (f != -1 or sign == 1) and _same(g, a * f * sign):
                return how + word
    return None


def _top_level(text: str) -> list[str]:
    """``text`` cut at its separators outside brackets (a tuple's comma is no case)."""
    text = _CASE_WORD.sub(" or ", _SIZING.sub("", text)).replace("\\{", " ").replace("\\}", " ")
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        sep = _CASE_SEP.match(text, i) if depth == 0 else None
        if sep is not None and i >= start:
            out.append(text[start:i])
            start = sep.end()
    return [*out, text[start:]]


def _parts(text: str) -> list[str] | None:
    """The case answers of a combined answer (its parts, ``\\pm`` spelled out), each normalized;
    None for fewer than two."""
    out: list[str] = []
    for piece in _top_level(text):
        p = _trivial(piece).split("=")[-1]  # x_1=3: the value
        if not p:
            continue
        m = _PM.match(p)
        out += [p[m.end():], "-" + p[m.end():]] if m else [p]
    if len(out) < 2:
        return None
    return sorted(str(v) if (v := _const(p)) is not None else p for p in out)


def _rounded(gold: str, answer: str) -> bool:
    """The gold is a decimal (two places or more) the answer, a constant not written so, rounds to."""
    m = re.fullmatch(r"-?\d+\.(\d{2,})", gold.strip())
    a = _const(answer)
    if m is None or a is None or re.fullmatch(r"-?\d+(?:\.\d+)?", answer.strip()):
        return False
    return abs(float(gold) - float(a)) <= 0.5 * 10 ** -len(m.group(1)) and float(gold) != float(a)


def transformation(gold: str, answer: str) -> str | None:
    """How ``gold`` is ``answer`` up to a trivial transformation or one formatting step (Appendix T,
    conditions 2 and 3; the module doc says which), or None where none is found."""
    if not gold.strip() or not answer.strip():
        return None
    how = _factor(gold, answer)
    if how is not None:
        return f"is the parent answer {how} (condition 2: a trivial transformation)"
    cases = _parts(answer)
    if cases is not None and cases == _parts(gold):
        return "holds the parent answer's cases recombined (condition 2: a trivial transformation)"
    sides = [s for s in gold.split("=") if s.strip()] if gold.count("=") == 1 else []
    if any(leak_level(s, answer, equivalence=False) is not None for s in sides):
        return ("states the parent answer as one side of an equation (condition 3: only a formatting step "
                "is left)")
    if _rounded(gold, answer):
        return "is the parent answer rounded to a decimal (condition 3: only a formatting step is left)"
    return None


def check_transformation(m: Milestone, parent_answer: str, index: int | None = None) -> CheckResult:
    how = transformation(m.answer, parent_answer)
    if how is None:
        return CheckResult(check=CHECK_TRANSFORM, passed=True, milestone=index,
                           reason="gold is no trivial transformation of the parent answer")
    return CheckResult(check=CHECK_TRANSFORM, passed=False, milestone=index,
                       reason=f"leak (Appendix T): gold {m.answer!r} {how}, {parent_answer!r}; a student given it "
                              "has the answer: the milestone must leave a real step before the parent answer")


def leaking_milestones(family: Family) -> list[int]:
    """The leak rule of Appendix N and P.1: the tested milestones whose gold restates the reference
    answer or its correction (``leak_level``), which Stage 0, C2 and C3 leave out (`Family.leaking`)."""
    refs = [ref for _, ref in references(family)]
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


def references(family: Family) -> list[tuple[str, str]]:
    """(what, answer) for the reference answer and its correction, each where the reference check
    finds it usable: a garbled one is no answer to leak."""
    out = [("the reference answer", family.parent_answer),
           ("the corrected reference answer", family.parent_answer_corrected or "")]
    return [(what, a) for what, a in out if a.strip() and answer_problem(a) is None]


def answers(family: Family) -> list[tuple[str, str]]:
    """(what, gold) pairs no text shown to a student may state: the reference answer, its correction
    (`references`), the INTEGRATE gold."""
    out = references(family)
    if family.integrate is not None and family.integrate.answer.strip():
        out.append(("the INTEGRATE gold", family.integrate.answer))
    return out


def _given(gold: str, problem_pieces: list[str], problem: str) -> bool:
    """The problem itself states the value (as written, up to trivial reformatting), or holds the
    number as a quantity anywhere (its data: the 7 of ``x^7``, ``7 \\cdot a``, a ``7-gon``)."""
    norm = _trivial(gold)
    return norm in {_trivial(p) for p in problem_pieces} or (
        _NUMBER.fullmatch(norm) is not None and norm in _NUMBER.findall(problem))


def stated_gold(text: str, family: Family, golds: list[tuple[str, str]], *,
                every_piece: bool = True) -> tuple[str, str, str] | None:
    """(what, gold, piece) for the first of ``golds`` the text states, or None. ``every_piece``: ask
    the verifier's equivalence of every piece (else of those the fast reader reads)."""
    found = _pieces(text)
    flat = _trivial(text)
    problem, problem_flat = _pieces(family.parent_prompt), _trivial(family.parent_prompt)
    for what, gold in golds:
        if _given(gold, problem, family.parent_prompt):
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
