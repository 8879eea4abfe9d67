"""Every table of one or more students together (`report_tables`): what report.md, report.json, the plots
and the HTML report show."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...ladder.outcomes import FamilyResults
from ...schemas.models import Family, teacher_prompts
from ...schemas.rubric import RubricLabel
from ..spent import Spent
from .base import N_RESAMPLES, SEED, TAUS, Frozen
from .checks import LeakResidual, ReviewRow, leak_residual, review_row
from .containment import Containment
from .contrasts import QFamily, adjust_planned, q_family
from .pairs import BudgetChange, Change, Pair, RankRow, budget_change, change, pair, ranks
from .sets import LeakRule, MilestoneTypes, TypesByOutcome, leak_rule, milestone_types, types_by_outcome
from .student import FormatAudit, Missing, StudentReport, StudentTables, family_rows, missing_verdicts, student_tables
from .truncation import PanelTruncation


class Meta(Frozen):
    tau: int
    seed: int
    n_resamples: int
    taus: list[int]
    students: list[str]
    roadmap_set: str | None
    graders: dict[str, str]  # per student, its grader and version, e.g. "strict (strict-2)"
    ungradable_reference: dict[str, str]  # pid -> why its reference answer is unusable (left out)
    base: str | None = None  # the student the change tables (Tables 18, 38) read the others against
    order: list[str] | None = None  # Figure 7's checkpoints left to right (None: the report's columns)
    benchmark: str | None = None  # the plain benchmark whose pass@1 is Table 1's last column
    teacher_prompts: list[str] = []  # the teacher prompts (name and hash) the set was compiled with
    bh_family: QFamily | None = None  # the contrasts' q family (None: no planned contrast ran)


class ReportTables(Frozen):
    """Everything report.md, report.json, the plots and the HTML report show."""

    meta: Meta
    students: dict[str, StudentReport]
    pairs: list[Pair] = []  # every pair of students, in column order (two or more students)
    ranks: dict[str, RankRow] = {}  # Table 12's rank column (two or more students with common families)
    changes: dict[str, Change] = {}  # Table 18: each student but the base, against it
    milestone_types: MilestoneTypes | None = None  # Tables 7 and 48 (None: the set's families not given)
    types_by_outcome: dict[str, dict[str, TypesByOutcome]] = {}  # Table 8, per student and outcome
    budgets: dict[str, BudgetChange] = {}  # Tables 15 and 22, per student probed at two budgets
    # Table 42, per student with a stored review (None: no review of any student: not run)
    review: dict[str, ReviewRow] | None = None
    # Appendix S's leak residual, per student whose C3 was run (None: the set's leaks not known)
    leak_residual: dict[str, LeakResidual] | None = None
    leak_rule: LeakRule | None = None  # None: the set's families not given

    def pair(self, a: str, b: str) -> Pair:
        """The pair of students ``a`` and ``b`` (in either order: read a's side as a)."""
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
        raise KeyError((a, b))


def _with_benchmark(t: StudentTables, math_score: float | None) -> dict[str, Any]:
    """A student's tables as fields, Table 1's MATH score set to its benchmark's pass@1 (None: not run)."""
    return dict(t) | {"summary": t.summary.model_copy(update={"math_score": math_score})}


@dataclass(frozen=True, kw_only=True)
class ReportInput:
    """What one report is made of, each part by its name (`report.write_report` says what each is)."""

    students: Mapping[str, list[FamilyResults]]
    tau: int = 1
    roadmap_set: str | None = None
    missing: Mapping[str, Missing | dict] = field(default_factory=dict)
    graders: Mapping[str, str] = field(default_factory=dict)
    ungradable: Mapping[str, str] = field(default_factory=dict)
    formats: Mapping[str, FormatAudit | dict] = field(default_factory=dict)
    settings: Mapping[str, str] = field(default_factory=dict)
    base: str | None = None
    families: Sequence[Family] | None = None
    budgets: Mapping[str, tuple[tuple[str, int], tuple[str, int]]] = field(default_factory=dict)
    order: Sequence[str] | None = None
    benchmark: str | None = None
    benchmarks: Mapping[str, float] = field(default_factory=dict)
    reviews: Mapping[str, Mapping[str, RubricLabel | None]] = field(default_factory=dict)
    leaking: Mapping[str, str] | None = None
    containment: Mapping[str, Containment] = field(default_factory=dict)
    kept_leaking: Sequence[str] = ()
    spent: Mapping[str, Spent] = field(default_factory=dict)
    panel_truncation: Mapping[str, PanelTruncation] = field(default_factory=dict)


def report_tables(given: ReportInput) -> ReportTables:
    """Every table of one or more students."""
    g = given
    students, tau, families, budgets, reviews, leaking = g.students, g.tau, g.families, g.budgets, g.reviews, g.leaking
    names = list(students)
    base = g.base if g.base is not None or len(names) < 2 else names[0]
    tables = {s: student_tables(f, tau) for s, f in students.items()}
    shown = {s: t.contrasts for s, t in tables.items()}
    adjusted = adjust_planned(shown)
    return ReportTables(
        meta=Meta(tau=tau, seed=SEED, n_resamples=N_RESAMPLES, taus=list(TAUS), students=names,
                  roadmap_set=g.roadmap_set, graders=dict(g.graders), ungradable_reference=dict(g.ungradable),
                  base=base, order=None if g.order is None else list(g.order), benchmark=g.benchmark,
                  teacher_prompts=teacher_prompts(families or []), bh_family=q_family(shown)),
        students={s: StudentReport(**_with_benchmark(t, g.benchmarks.get(s)) | {"contrasts": adjusted[s]},
                                   missing=g.missing.get(s) or missing_verdicts([], []), format=g.formats.get(s),
                                   settings=g.settings.get(s), families=family_rows(students[s], tau),
                                   containment=g.containment.get(s), spent=g.spent.get(s),
                                   panel_truncation=g.panel_truncation.get(s))
                  for s, t in tables.items()},
        pairs=[pair(students[a], students[b], tau, names=(a, b)) for i, a in enumerate(names) for b in names[i + 1:]],
        ranks=ranks(students, tau),
        changes={s: change(students[base], f, tau) for s, f in students.items() if base is not None and s != base},
        milestone_types=None if families is None else milestone_types(families),
        leak_rule=None if families is None else leak_rule(families, g.kept_leaking),
        types_by_outcome={} if families is None else {s: types_by_outcome(f, families, tau) for s, f in students.items()},
        budgets={s: budget_change(students[lo], students[hi], (lo, hi), (mlo, mhi), tau)
                 for s, ((lo, mlo), (hi, mhi)) in budgets.items()},
        review={s: review_row(students[s], labels, tau) for s, labels in reviews.items() if s in students}
        if reviews else None,
        leak_residual=None if leaking is None else
        {s: row for s, f in students.items() if (row := leak_residual(f, leaking, tau)) is not None})
