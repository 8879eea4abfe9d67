"""PRIM's analyses of one student (§3, App. B.3), and the two diagnoses side by side, counted over its
problems (`problems`: each dimension's samples of a problem, and a problem's pass and place). A
dimension's accuracy is the mean over problems of each problem's rate, with a bootstrap interval over
problems. report.md is `markdown`'s.

- Table 1: Discovery, Generation, Digestion, Execution (gold), Dig − Disc, Exec − Gen;
- Table 2 / 8: Generation and Execution under each primitive source, pp against Generation;
- Table 7: each dimension by the gold primitive's family;
- Table 9: Generation failures by Discovery × Execution (gold): the four quadrants;
- Table 10: rescue under a teacher primitive for digestible against undigestible failures;
- Figure 2: the joint Discovery × Generation composition (D±G±), as counts;
- Figure 12: each dimension's output tokens, right against wrong answers (quartiles);
- Tables 3 / 11 (with a second checkpoint): of each quadrant's Generation failures, those the other
  checkpoint's Generation solves (repaired), and the problems it loses (regressed);
- side by side: per family, PRIM's quadrant beside the ladder's five-way gap and outcome, and
  their cross-table over the set;
- per family: its primitives, and each primitive the student wrote with the judge's verdicts and
  evidence (what a family page shows);
- across students (Figures 2 and 3): each student's Discovery against its Generation, and its D±G±.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence, Set

from ..ladder.outcomes import FamilyResults, known_outcome
from ..report.stats import Interval, bootstrap_ci
from ..report.tables import Frozen, Truncation, known_gap, truncation, why_unreadable
from ..schemas import Rollout
from ..schemas.prim import PrimPrimitive
from ..store import PrimScore
from .dimensions import DIMENSIONS
from .probe import read_written
from .problems import UNKNOWN, Problem, failures, passes, problems, quadrant_of, rate
from .scoring import QUADRANTS, UNREADABLE_SCORE, primitive_acc


class Dimension(Frozen):
    n: int
    interval: Interval | None  # the share (0-1), None when no problem has the dimension


class Table1(Frozen):
    dimensions: dict[str, Dimension]
    dig_minus_disc: float | None  # percentage points
    exec_minus_gen: float | None


def _dimension(values: list[float]) -> Dimension:
    return Dimension(n=len(values), interval=bootstrap_ci(values) if values else None)


def _point(d: Dimension) -> float | None:
    return None if d.interval is None else 100 * d.interval.point


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def table1(ps: Sequence[Problem]) -> Table1:
    dims = {name: _dimension([r for p in ps if (r := rate(p.dimension(name))) is not None]) for name in DIMENSIONS.names}
    pt = {name: _point(d) for name, d in dims.items()}
    return Table1(dimensions=dims, dig_minus_disc=_diff(pt["digestion"], pt["discovery"]),
                  exec_minus_gen=_diff(pt["execution"], pt["generation"]))


class Support(Frozen):
    """Table 2 / 8: one setting's accuracy (percent) over the problems it ran on, and its change in
    points against Generation on those same problems."""

    setting: str
    n: int
    accuracy: float | None
    change: float | None


def table2(ps: Sequence[Problem], sources: Sequence[str]) -> list[Support]:
    rows = [Support(setting="generation", n=sum(bool(p.generation) for p in ps),
                    accuracy=_mean_pct([rate(p.generation) for p in ps]), change=None)]
    for s in sources:
        both = [p for p in ps if p.execution.get(s) and p.generation]
        acc = _mean_pct([rate(p.execution[s]) for p in both])
        rows.append(Support(setting=f"execution ({s})", n=len(both), accuracy=acc,
                            change=_diff(acc, _mean_pct([rate(p.generation) for p in both]))))
    return rows


def _mean_pct(values: Sequence[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return 100 * sum(xs) / len(xs) if xs else None


def table7(ps: Sequence[Problem]) -> dict[str, dict[str, float | None]]:
    """Each dimension's accuracy (percent) by the gold primitive's family."""
    families = sorted({p.family or "none" for p in ps})
    return {fam: {name: _mean_pct([rate(p.dimension(name)) for p in ps if (p.family or "none") == fam])
                  for name in DIMENSIONS.names} for fam in families}


def table9(ps: Sequence[Problem], threshold: int) -> dict[str, int]:
    """Generation failures per quadrant (and those that cannot be placed)."""
    counts = Counter(quadrant_of(p, threshold) for p in failures(ps, threshold))
    return {q: counts[q] for q in (*QUADRANTS.values(), UNKNOWN)}


class Rescue(Frozen):
    n: int
    rescued: int
    rate: float | None


def table10(ps: Sequence[Problem], threshold: int, source: str) -> dict[str, Rescue]:
    """Generation failures split by Digestion; rescue: Execution under ``source`` passes."""
    out = {}
    for name, digested in (("digestible", True), ("undigestible", False)):
        group = [p for p in failures(ps, threshold) if passes(p.digestion, threshold) is digested
                 and p.execution.get(source)]
        rescued = sum(bool(passes(p.execution[source], threshold)) for p in group)
        out[name] = Rescue(n=len(group), rescued=rescued, rate=rescued / len(group) if group else None)
    return out


def figure2(ps: Sequence[Problem], threshold: int) -> dict[str, int]:
    """Problems by Discovery (D) and Generation (G), each passed or not (both known)."""
    counts = Counter(f"D{'+' if d else '−'}G{'+' if g else '−'}" for p in ps
                     if (d := passes(p.discovery, threshold)) is not None
                     and (g := passes(p.generation, threshold)) is not None)
    return {k: counts[k] for k in ("D+G+", "D+G−", "D−G+", "D−G−")}


class Repairs(Frozen):
    """Tables 3 / 11: per quadrant of the base's Generation failures, how many the other checkpoint's
    Generation solves; and of the problems the base solves, how many it fails (regressed)."""

    after: str
    by_quadrant: dict[str, Rescue]
    solved_before: int
    regressed: int


def repairs(ps: Sequence[Problem], after: str, after_generation: Mapping[str, list[bool]],
            threshold: int) -> Repairs:
    by_quadrant = {}
    for q in (*QUADRANTS.values(), UNKNOWN):
        group = [p for p in failures(ps, threshold) if quadrant_of(p, threshold) == q and after_generation.get(p.pid)]
        repaired = sum(bool(passes(after_generation[p.pid], threshold)) for p in group)
        by_quadrant[q] = Rescue(n=len(group), rescued=repaired, rate=repaired / len(group) if group else None)
    solved = [p for p in ps if passes(p.generation, threshold) and after_generation.get(p.pid)]
    return Repairs(after=after, by_quadrant=by_quadrant, solved_before=len(solved),
                   regressed=sum(passes(after_generation[p.pid], threshold) is False for p in solved))


class Tokens(Frozen):
    n: int
    q1: float | None
    median: float | None
    q3: float | None


def _tokens(values: list[int]) -> Tokens:
    if not values:
        return Tokens(n=0, q1=None, median=None, q3=None)
    if len(values) == 1:
        return Tokens(n=1, q1=values[0], median=values[0], q3=values[0])
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Tokens(n=len(values), q1=q1, median=median, q3=q3)


def dimension_of(target: str) -> str:
    """A PRIM rollout's dimension as the tables name it: discovery, ..., "execution (gold)"."""
    d = DIMENSIONS.by_target(target)
    if d is None or d.shows != "parent+support":
        return d.name if d else target
    return f"{d.name} ({target[len(d.target):]})"


def truncations(pids: Mapping[str, str | None], rollouts: Sequence[Rollout],
                finish: Mapping[str, str | None]) -> dict[str, Truncation]:
    """Per dimension, how many of its answers were cut off and why the unreadable ones were (`report.tables.truncation`)."""
    by: dict[str, list[Rollout]] = {}
    for r in rollouts:
        if r.pid in pids:
            by.setdefault(dimension_of(r.target), []).append(r)
    order = sorted(by, key=lambda name: (DIMENSIONS.names.index(name.split(" ")[0]), name))  # Table 1's order
    return {name: truncation(by[name], finish) for name in order}


def figure12(pids: Mapping[str, str | None], rollouts: Sequence[Rollout], scores: Sequence[PrimScore],
             tokens: Mapping[str, int], tau: float) -> dict[str, dict[str, Tokens]]:
    """Per dimension (Execution under each source apart), the output tokens of its right and wrong
    answers: graded answers by their verdict, written primitives by PrimitiveAcc (missing scores
    left out); ``tokens``: each call key's output tokens."""
    right = {(s.pid, s.target, s.k): primitive_acc(s.score, tau) for s in scores if s.score is not None}
    out: dict[str, dict[str, list[int]]] = {}
    for r in rollouts:
        if r.pid not in pids or not r.verdict.graded or r.call_key not in tokens:
            continue
        ok = right.get((r.pid, r.target, r.k)) if r.target in DIMENSIONS.written else r.verdict.accepted
        if ok is None:
            continue
        name = dimension_of(r.target)
        out.setdefault(name, {"right": [], "wrong": []})["right" if ok else "wrong"].append(tokens[r.call_key])
    return {name: {k: _tokens(v) for k, v in split.items()} for name, split in out.items()}


class Written(Frozen):
    """A primitive the student wrote (Discovery or Digestion sample k) and the judge on it."""

    target: str
    k: int
    primitive: dict[str, str] | None  # None: unreadable
    status: str | None  # scored or missing; None: not scored (no gold, or not yet)
    validity: int | None
    failure: str | None
    gate: float | None
    mechanism: float | None
    score: float | None
    reason: str
    evidence: dict[str, str]


class FamilyDetail(Frozen):
    family: str | None
    primitives: dict[str, str]  # provenance (and author) -> the primitive as labelled text
    written: list[Written]


def details(pids: Mapping[str, str | None], primitives: Sequence[PrimPrimitive], rollouts: Sequence[Rollout],
            scores: Sequence[PrimScore], finish: Mapping[str, str | None]) -> dict[str, FamilyDetail]:
    """Per family, its primitives and each one the student wrote with the judge's verdicts; an unreadable
    primitive is scored 0 with no judge asked, and says why it was unreadable (`report.tables.truncation`)."""
    by_key = {(s.pid, s.target, s.k): s for s in scores}
    out: dict[str, FamilyDetail] = {}
    for pid, family in pids.items():
        shown = {(p.provenance if not p.author else f"{p.provenance} ({p.author})"): p.labelled()
                 for p in primitives if p.pid == pid}
        written = []
        for r in rollouts:
            if r.pid != pid or r.target not in DIMENSIONS.written:
                continue
            s = by_key.get((pid, r.target, r.k))
            if s is not None and s.reason == UNREADABLE_SCORE:  # scored 0 by rule, the judge never asked
                why = why_unreadable(r, finish.get(r.call_key))
                s = s.model_copy(update={"validity": None, "failure": None, "reason":
                                         f"unreadable ({why}): scored 0, the judge was not asked"})
            written.append(Written(
                target=r.target, k=r.k, primitive=read_written(r), status=None if s is None else s.status,
                validity=None if s is None else s.validity, failure=None if s is None else s.failure,
                gate=None if s is None else s.gate, mechanism=None if s is None else s.mechanism,
                score=None if s is None else s.score, reason="" if s is None else s.reason,
                evidence={} if s is None else s.evidence))
        out[pid] = FamilyDetail(family=family, primitives=shown, written=written)
    return out


class SideBySide(Frozen):
    """Per family, PRIM's place beside the ladder's gap and outcome; and the cross-table
    (PRIM row -> ladder gap -> families)."""

    families: dict[str, dict[str, str]]
    cross: dict[str, dict[str, int]]


def side_by_side(ps: Sequence[Problem], ladder: Sequence[FamilyResults], threshold: int) -> SideBySide:
    by_pid = {f.pid: f for f in ladder}
    rows: dict[str, dict[str, str]] = {}
    cross: dict[str, dict[str, int]] = {}
    for p in ps:
        f = by_pid.get(p.pid)
        gap = known_gap(f, threshold) if f else None
        outcome = known_outcome(f, threshold) if f else None
        q = quadrant_of(p, threshold)
        label = UNKNOWN if gap is None else gap.value
        rows[p.pid] = {"prim": q, "ladder_gap": label, "ladder_outcome": UNKNOWN if outcome is None else outcome.value}
        cross.setdefault(q, {})
        cross[q][label] = cross[q].get(label, 0) + 1
    return SideBySide(families=rows, cross=cross)


class PrimReport(Frozen):
    student: str
    judge: str
    answer_judge: str | None  # answers it reads correct count right too (the grader's alone when None)
    answer_judge_accepts: int
    roadmap_set: str
    tau: float
    threshold: int
    problems: int
    missing_scores: int
    table1: Table1
    table2: list[Support]
    table7: dict[str, dict[str, float | None]]
    table9: dict[str, int]
    table10: dict[str, Rescue]
    rescue_source: str
    figure2: dict[str, int]
    figure12: dict[str, dict[str, Tokens]]
    repairs: Repairs | None
    side_by_side: SideBySide
    families: dict[str, FamilyDetail]
    settings: str | None = None  # the settings of the runs read (`experiment.selection`); None: no answers
    budgets: list[int] = []  # their --max-tokens
    truncation: dict[str, Truncation] = {}  # per dimension, its answers cut off and unreadable

    @property
    def warnings(self) -> list[str]:
        """A line per dimension with answers cut off (over 10%) or unreadable: the banner of report.md
        and the HTML overview."""
        return [t.said(name, self.budgets) for name, t in self.truncation.items() if t.warns]


def prim_report(*, student: str, judge: str, roadmap_set: str, pids: Mapping[str, str | None],
                rollouts: Sequence[Rollout], scores: Sequence[PrimScore], ladder: Sequence[FamilyResults],
                tau: float, threshold: int, sources: Sequence[str], rescue_source: str,
                tokens: Mapping[str, int], finish: Mapping[str, str | None] | None = None,
                settings: str | None = None, budgets: Sequence[int] = (), primitives: Sequence[PrimPrimitive] = (),
                after: tuple[str, Sequence[Rollout]] | None = None,
                answer_judge: tuple[str, Set[tuple[str, str, int]]] | None = None) -> PrimReport:
    """Every table of one student; ``tokens``: each call key's output tokens, ``finish`` its finish reason
    (None: none stored); ``settings`` and ``budgets``: those of the runs read; ``primitives``: those
    the family details show (the student's own are its written ones); ``after``: a second
    checkpoint's name and its rollouts (its Generation is read), for the repair table; ``answer_judge``:
    its name and the answers it reads correct, which then count right too."""
    judge_name, judged_right = answer_judge or (None, frozenset())
    ps = problems(pids, rollouts, scores, tau, judged_right)
    after_table = None
    if after is not None:
        later = {p.pid: p.generation for p in problems(pids, after[1], (), tau)}
        after_table = repairs(ps, after[0], later, threshold)
    return PrimReport(student=student, judge=judge, answer_judge=judge_name,
                      answer_judge_accepts=sum((r.pid, r.target, r.k) in judged_right for r in rollouts if r.pid in pids),
                      roadmap_set=roadmap_set, tau=tau, threshold=threshold,
                      problems=len(ps), missing_scores=sum(s.status == "missing" for s in scores if s.pid in pids),
                      table1=table1(ps), table2=table2(ps, sources), table7=table7(ps), table9=table9(ps, threshold),
                      table10=table10(ps, threshold, rescue_source), rescue_source=rescue_source,
                      figure2=figure2(ps, threshold), figure12=figure12(pids, rollouts, scores, tokens, tau),
                      repairs=after_table,
                      side_by_side=side_by_side(ps, ladder, threshold),
                      families=details(pids, primitives, rollouts, scores, finish or {}),
                      settings=settings, budgets=list(budgets), truncation=truncations(pids, rollouts, finish or {}))


class StudentPoint(Frozen):
    """Figure 3's point of one student (percent), and Figure 2's composition."""

    discovery: float | None
    generation: float | None
    composition: dict[str, int]


def across(reports: Sequence[PrimReport]) -> dict[str, StudentPoint]:
    """Figures 2 and 3 over students: each one's Discovery and Generation, and its D±G± counts."""
    return {r.student: StudentPoint(discovery=_point(r.table1.dimensions["discovery"]),
                                    generation=_point(r.table1.dimensions["generation"]), composition=r.figure2)
            for r in reports}
