"""Milestone answers in the models' own solutions (paper Appendix Q, Tables 35 to 37).

Containment test: a milestone is attained in an unaided (C1) attempt when its gold answer appears
in the attempt's text, verbatim after the verifier's string normalization (spaces aside), or, for a
gold that is a number, as a number of the same value. The cross-problem control checks the same
golds against the attempts on every other family; the statement-novel rates keep only the golds
that the problem statement does not itself contain. A pair is (milestone gold, attempt).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import NamedTuple

from ..report.markdown import by_length, num, share, solved_alone as solved_alone_md, table
from ..report.tables import Against, Containment, Rates, Share, SolvedAlone, Versus
from ..schemas.conditions import C1
from ..schemas.models import Family, Rollout
from ..verify.normalize import normalize, strip_thousands

LENGTHS = (None, 25, 15)  # Table 37's columns: every gold, then golds of at most that many characters
_SPACE = re.compile(r"\s+")
# a number as written in a solution: an integer or decimal, a \frac of integers, a/b
_NUMBER = re.compile(r"(?<![\w.])(-?)(?:\\frac\{(\d+)\}\{(\d+)\}|(\d+(?:\.\d+)?)(?:/(\d+)(?!\.?\d))?)(?!\.?\d)")


def _value(m: re.Match[str]) -> Fraction | None:
    sign, fnum, fden, num, den = m.groups()
    n, d = (fnum, fden) if fnum else (num, den or "1")
    if int(d) == 0:
        return None
    v = Fraction(n) / Fraction(d)
    return -v if sign else v


def number(gold: str) -> Fraction | None:
    """The value of a gold answer that is one number (after normalization), else None."""
    s = strip_thousands(normalize(gold)).replace(" ", "")
    m = _NUMBER.fullmatch(s)
    return _value(m) if m else None


def numbers(text: str) -> set[Fraction]:
    """Every number written in ``text`` (normalized), by value."""
    return {v for m in _NUMBER.finditer(normalize(text)) if (v := _value(m)) is not None}


def _squash(s: str) -> str:
    return _SPACE.sub("", normalize(s))


class _Text(NamedTuple):
    """A text read once for the golds looked for in it: the numbers it writes and its squashed form
    (the control matches every gold against every family's attempts)."""

    numbers: set[Fraction]
    squashed: str


def _read(text: str) -> _Text:
    return _Text(numbers(text), _squash(text))


def _finder(gold: str) -> Callable[[_Text], bool]:
    """Whether a text holds ``gold``: as a number of its value, or verbatim after normalization (the
    gold read once for the texts it is looked for in)."""
    value = number(gold)
    if value is not None:
        return lambda text: value in text.numbers
    g = _squash(gold)
    return lambda text: bool(g) and g in text.squashed


def contains(text: str, gold: str) -> bool:
    """Whether ``text`` holds ``gold`` (``_finder``)."""
    return _finder(gold)(_read(text))


def _rate(hits: int, pairs: int) -> Share:
    return Share(hits=hits, pairs=pairs, rate=hits / pairs if pairs else None)


def _ratio(own: Share, control: Share) -> float | None:
    return own.rate / control.rate if own.rate is not None and control.rate else None


Keep = Callable[[str, int, str], bool]  # whether a pair's milestone counts: by pid, index and gold


def _own(fams: Sequence[Family], attempts: dict[str, list[_Text]], keep: Keep) -> Share:
    """Own hits and pairs of the tested milestones ``keep`` keeps against their family's attempts."""
    hits = pairs = 0
    for f in fams:
        for i, m in f.tested():
            if keep(f.pid, i, m.answer):
                hits += sum(map(_finder(m.answer), attempts[f.pid]))
                pairs += len(attempts[f.pid])
    return _rate(hits, pairs)


def _short(limit: int | None) -> Keep:
    return lambda pid, i, gold: limit is None or len(gold) <= limit


def _length_key(limit: int | None) -> str:
    return "all" if limit is None else f"<={limit}"


def solved_alone(fams: Sequence[Family], attempts: dict[str, list[_Text]],
                 rollouts: Sequence[Rollout]) -> SolvedAlone | None:
    """Table 36: own rates of the milestones the student solves alone (>= 1 accepted of its graded Stage 0
    rollouts) and of those it does not; None without graded Stage 0 rollouts on these families."""
    verdicts: dict[tuple[str, int], bool] = {}
    for r in rollouts:
        if r.target.startswith("m") and r.verdict.graded:
            key = (r.pid, int(r.target[1:]))
            verdicts[key] = verdicts.get(key, False) or r.verdict.accepted
    if not any((f.pid, i) in verdicts for f in fams for i, _ in f.tested()):
        return None
    return SolvedAlone(solved=_own(fams, attempts, lambda pid, i, gold: verdicts.get((pid, i)) is True),
                       not_solved=_own(fams, attempts, lambda pid, i, gold: verdicts.get((pid, i)) is False))


def roadmap_match(families: Sequence[Family], rollouts: Sequence[Rollout],
                  against: Sequence[Family] | None = None) -> Containment:
    """Own, control and statement-novel rates of one student (Table 35), with the counts behind
    each share; the own rates split by whether the student solves the milestone alone (Table 36) and
    by gold length (Table 37), and with ``against`` (a second roadmap set) the ratio of this set's own
    rate to that set's on the families both have, at each length. Families without a C1 attempt take
    no part; every stored C1 attempt counts, graded or not (containment reads the text, not the
    verdict)."""
    attempts: dict[str, list[_Text]] = {}
    for r in rollouts:
        if r.target == C1.name:
            attempts.setdefault(r.pid, []).append(_read(r.response))
    fams = [f for f in families if f.pid in attempts]
    # each tested milestone's gold, and whether the problem statement leaves it novel
    golds = {f.pid: [(m.answer, not contains(f.parent_prompt, m.answer)) for _, m in f.tested()] for f in fams}
    counts = {k: [0, 0] for k in ("own", "control", "novel_own", "novel_control")}
    for f in fams:
        for g, novel in golds[f.pid]:
            kinds = ("own", "novel_own") if novel else ("own",)
            found = _finder(g)
            for other in fams:
                hits = sum(map(found, attempts[other.pid]))
                for kind in kinds:
                    key = kind if other.pid == f.pid else kind.replace("own", "control")
                    counts[key][0] += hits
                    counts[key][1] += len(attempts[other.pid])
    own, control = _rate(*counts["own"]), _rate(*counts["control"])
    n_own, n_control = _rate(*counts["novel_own"]), _rate(*counts["novel_control"])
    versus = None
    if against is not None:
        theirs_by_pid = {f.pid: f for f in against if f.pid in attempts}
        mine = [f for f in fams if f.pid in theirs_by_pid]
        theirs = [theirs_by_pid[f.pid] for f in mine]
        versus = Against(families=len(mine), by_length={
            _length_key(n): Versus(own=(a := _own(mine, attempts, _short(n))),
                                   other=(b := _own(theirs, attempts, _short(n))), ratio=_ratio(a, b))
            for n in LENGTHS})
    return Containment(
        families=len(fams), attempts=sum(len(attempts[f.pid]) for f in fams), golds=sum(map(len, golds.values())),
        novel_golds=sum(novel for gs in golds.values() for _, novel in gs),
        all=Rates(own=own, control=control, ratio=_ratio(own, control)),
        novel=Rates(own=n_own, control=n_control, ratio=_ratio(n_own, n_control)),
        solved_alone=solved_alone(fams, attempts, rollouts),
        by_length={_length_key(n): _own(fams, attempts, _short(n)) for n in LENGTHS}, against=versus)


def markdown(results: dict[str, Containment]) -> list[str]:
    """Table 35's layout: per student, own, control and ratio over all golds and novel golds; then Tables 36
    and 37 as the report has them."""
    rows = [[s, r.families, r.attempts, f"{r.novel_golds}/{r.golds}",
             share(r.all.own), share(r.all.control), num(r.all.ratio, "{:.1f}x"),
             share(r.novel.own), share(r.novel.control), num(r.novel.ratio, "{:.1f}x")]
            for s, r in results.items()]
    header = ["Model", "Families", "C1 attempts", "Novel golds", "Own", "Control", "Ratio",
              "Own (novel)", "Control (novel)", "Ratio (novel)"]
    return ["## Milestone answers in the unaided (C1) attempts (Table 35)", "",
            "Share of (milestone gold, attempt) pairs whose attempt contains the gold (hits/pairs). Control: "
            "the same golds against the attempts on every other family. Novel: golds the problem statement "
            "does not contain.", "",
            *table(header, rows), "", *solved_alone_md(results), *by_length(results)]
