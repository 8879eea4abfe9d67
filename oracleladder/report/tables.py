"""The report's tables, computed from each student's results; typed, and apart from their rendering
(`markdown` writes report.md from them, `plots` the figures, and their JSON form is report.json).

Tables follow the paper: same-set summary (Table 1), per-condition solved counts (Table 21),
reasoning-gap taxonomy with milestone-test statistics (Table 16 / Table 14), threshold sweep
(Table 9), specificity contrasts with paired exact McNemar (Tables 10-11), family-level bootstrap
CIs with the any-probe rank interval (Table 12), and for two or more students the bootstrap pairwise
ordering of every pair (Table 13), the outcome and five-way label transitions (Table 38) and the change
in counts (Table 18) of each student against a base. Also: the fingerprint of the families that pass the
milestone test (Table 14), per-condition recovery over tau (Table 28), Benjamini-Hochberg over the planned
contrasts of all the students as one family, the set's milestone types and answer schemas and each student's
types by outcome state (Tables 7, 48 and 8, given the set's families), a student at two budgets (Tables 22
and 15, with the transitions of each family's outcome from one budget to the other), and the milestone
answers in each student's unaided attempts by whether it solves the milestone alone and by gold length
(Tables 36 and 37: `audit.roadmap` computes them from the attempts' text, and the report is given them).
Per student and family, its labels and counts (`family_rows`: report.json's "families", `Report.to_pandas`).
Conditions that were not run are "not run" (None in report.json), never zeros.
The primitive rung (docs/primitive.md: Primitive-Needed, Primitive-gap, C2-primitive and its control)
has its counts where C2-primitive was run and none elsewhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from ..ladder.outcomes import (
    NOT_DETERMINED,
    FamilyResults,
    Gap,
    Outcome,
    classify,
    known_outcome,
    ladder_gaps,
    ladder_outcomes,
    milestone_test,
    outcome_counts,
    outcome_label,
    parent_outcome,
    solved,
)
from ..schemas.conditions import C1, C2P, C3, LADDER
from ..schemas.models import Family, teacher_prompts
from ..schemas.rubric import CATEGORIES, RubricLabel
from ..schemas.types import AnswerSchema, MilestoneType
from .palette import NOT_CLASSIFIED
from .spent import Spent
from .stats import (
    Interval,
    McNemar,
    Rank,
    Transitions,
    benjamini_hochberg,
    bootstrap_ci,
    bootstrap_order,
    bootstrap_ranks,
    mcnemar_exact,
    threshold_sweep,
    transition_matrix,
)

SEED = 42
N_RESAMPLES = 1000
TAUS = (1, 2, 3, 4, 5)
NOT_RUN = "not run"
STAGE0 = "Stage 0"  # the milestones' verdicts together, where a table has one row per condition
# the format audit's buckets, each rollout in one (audit.format)
BUCKETS = ("no_boxed", "no_boxed_trunc", "unparsable", "parsed_wrong", "parsed_correct")
ANY_PROBE = "Any probe"


class Frozen(BaseModel):
    """A computed table: a value, never changed after it is made."""

    model_config = ConfigDict(frozen=True)


class Missing(Frozen):
    """Verdicts the tables lack, by condition (the Stage 0 milestones together): rollouts whose grading
    failed (`ladder regrade` grades them) and jobs whose call failed (a rerun asks again)."""

    ungraded: dict[str, int]
    failed: dict[str, int]
    ungraded_total: int
    failed_total: int


class FormatRow(Frozen):
    """The format audit (Table 24), one condition: the count of each of BUCKETS, ``n`` (bucketed rollouts,
    the shares' denominator), ``truncated`` (those of them whose answer hit the token budget, boxed or
    not), ``ungraded`` and ``failed``."""

    n: int
    no_boxed: int
    no_boxed_trunc: int
    unparsable: int
    parsed_wrong: int
    parsed_correct: int
    truncated: int
    ungraded: int
    failed: int


class FormatAudit(Frozen):
    """A student's format audit (`audit.format` reads it from the store): its rows by condition, the
    conditions to warn about (too many answers cut off) and the ``--max-tokens`` of the runs."""

    max_tokens: list[int]
    table: dict[str, FormatRow]
    cut_off: list[str]
    grammars: list[str] = []  # the grammars (GBNF) that constrained the decoding of the runs, if any

    @model_serializer(mode="wrap")
    def _json(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)  # no grammar: the record reads as before grammars existed
        return out if self.grammars else {k: v for k, v in out.items() if k != "grammars"}


class ConditionCount(Frozen):
    """Table 21 / Table 10, one condition: families run, families solved (>= tau of K), per-rollout rate."""

    families_run: int
    solved: int
    rollouts: int
    per_rollout_rate: float


class Contrast(Frozen):
    """Tables 10-11, one contrast: paired exact McNemar on the families where both conditions were run."""

    contrast: str
    a: str
    b: str
    planned: bool
    status: str  # "ok", or NOT_RUN when no family has both (then n is 0 and the test's fields are None)
    n: int
    delta: int | None = None  # only_a - only_b
    only_a: int | None = None
    only_b: int | None = None
    discordant: int | None = None
    p_value: float | None = None
    p_bh: float | None = None  # Benjamini-Hochberg over the report's planned tests (None: not planned)

    @model_serializer(mode="wrap")
    def _json(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        row = handler(self)
        return row if self.status != NOT_RUN else {k: row[k] for k in ("contrast", "a", "b", "planned", "status", "n")}


class Stage0(Frozen):
    """Milestone-test statistics beside the taxonomy (Table 14 / Appendix P.4); None where Stage 0 was not run."""

    stage0_run: bool
    families_with_stage0: int
    pass_strict: int | None
    pass_fraction: int | None
    mean_tested_milestones: float | None
    milestones_tested: int | None
    milestones_solved: int | None
    milestone_solve_rate: float | None


class Summary(Frozen):
    """Table 1: shares of the student's families (direct accuracy: of its C1 rollouts)."""

    direct_accuracy: float | None
    solved_directly: int | None  # None: C1 not run
    solved_directly_share: float | None
    solved_any: int
    solved_any_share: float | None
    added_by_milestones: int | None  # None: C1 not run
    added_by_milestones_share: float | None
    solved_with_primitive: int | None
    solved_with_primitive_share: float | None
    math_score: float | None = None  # pass@1 of the plain benchmark probe at the same settings (None: not run)


class StudentTables(Frozen):
    """Every table of one student. Count dicts are keyed by label value; the primitive rung's labels only
    where it was run."""

    n: int
    tau: int
    mode: str
    # attempts per condition and per milestone (the most seen; a resumed or partial run can have fewer)
    k: int | None
    k_stage0: int | None
    # None for the gaps when Stage 0 was not run (Direct needs no milestone test)
    taxonomy: dict[str, int | None]
    taxonomy_fraction: dict[str, int | None]
    outcomes: dict[str, int]
    # families whose label needs a run that is missing (Stage 0, or a C1-C3 rung): in no gap count
    taxonomy_not_classified: int
    # "outcomes" without its "Not determined" key, and that key's count (the plots read them)
    outcomes_known: dict[str, int]
    outcome_undetermined: int
    milestone_test_pass: int | None
    primitive_run: bool
    stage0: Stage0
    summary: Summary
    conditions: dict[str, ConditionCount | None]  # None: not run
    not_run: list[str]
    threshold_sweep: dict[str, dict[str, int]]  # by tau (as a string: a JSON key)
    contrasts: list[Contrast]
    bootstrap: dict[str, Interval]  # Table 12, by outcome, gap or ANY_PROBE; absent: not run
    # Table 14's fingerprint: outcome counts of the families that pass the strict milestone test (None: no Stage 0)
    fingerprint_passing: dict[str, int] | None = None
    # Table 28: per condition, families solved at each tau (as a string: a JSON key); None: not run
    recovery_by_tau: dict[str, dict[str, int] | None] = {}


class Count(Frozen):
    """Attempts that verified, of those graded."""

    n_correct: int
    k: int


class FamilyRow(Frozen):
    """One family of one student: its labels (None where a run they need is missing) and its counts."""

    pid: str
    outcome: str  # Algorithm 3 as every output prints it (`outcome_label`): "Not determined" where a rung is not run
    outcome_known: str | None  # None: a C1-C3 rung the outcome reads was not run
    milestone_test_strict: bool | None  # None: Stage 0 not run on this family
    milestone_test_fraction: bool | None
    gap: str | None  # the five-way label, strict milestone test
    gap_fraction: str | None  # under the fraction milestone test
    conditions: dict[str, Count]
    milestones: dict[str, Count]  # "m<i>": the i-th milestone alone (Stage 0)


class Share(Frozen):
    """Containment: of ``pairs`` (milestone gold, unaided attempt), the ``hits`` whose attempt holds the gold."""

    hits: int
    pairs: int
    rate: float | None  # None: no pair


class Rates(Frozen):
    """Table 35, one row half: the own rate, the cross-problem control's, and their ratio."""

    own: Share
    control: Share
    ratio: float | None


class SolvedAlone(Frozen):
    """Table 36: own pairs of the milestones the student solves alone (>= 1 of K in Stage 0) and of the others."""

    solved: Share
    not_solved: Share


class Versus(Frozen):
    """Table 37, one length: this set's own rate and a second set's on the same attempts, and their ratio."""

    own: Share
    other: Share
    ratio: float | None


class Against(Frozen):
    families: int  # the families both sets have
    by_length: dict[str, Versus]


class Containment(Frozen):
    """Milestone answers in one student's unaided (C1) attempts (paper Appendix Q, `audit.roadmap`): Table 35
    over all golds and statement-novel ones, Table 36 (None without Stage 0 verdicts), and Table 37: the own
    rate by gold length ("all", "<=25", "<=15"), with ``against`` a second roadmap set's."""

    families: int
    attempts: int
    golds: int
    novel_golds: int
    all: Rates
    novel: Rates
    solved_alone: SolvedAlone | None
    by_length: dict[str, Share]
    against: Against | None = None


class StudentReport(StudentTables):
    """A student's tables with what they leave out (missing verdicts), its format audit, the settings
    of the runs its results come from, its per-family rows, and the containment of milestone answers in
    its unaided attempts (None: no attempt text, e.g. an imported panel, or C1 not run)."""

    missing: Missing
    format: FormatAudit | None
    containment: Containment | None = None
    settings: str | None = None  # "K = 8, max_tokens = 4096, ...": what every table of it was computed at
    families: list[FamilyRow] = []
    spent: Spent | None = None  # None: not read from a store (tables of results alone)


class Ordering(Frozen):
    """Table 13: fraction of paired family resamples where one student's count exceeds the other's."""

    a_gt_b: float | None  # None: no common family
    b_gt_a: float | None
    n_resamples: int
    seed: int


class Pair(Frozen):
    """Two students on their common families: Table 38 transitions and Table 13 ordering."""

    a: str
    b: str
    n_common: int
    outcome_transitions: Transitions
    gap_transitions: Transitions | None  # None: either student has no Stage 0 verdicts
    order_any_probe: Ordering
    order_direct: Ordering
    mcnemar_any_probe: McNemar


class RankRow(Frozen):
    """Table 12's rank column, one student: its rank by any-probe count on the families every student has."""

    any_probe: Rank
    n_common: int


class Change(Frozen):
    """Table 18, one student against the base on their common families: outcome counts and the change."""

    n_common: int
    base: dict[str, int]
    counts: dict[str, int]
    delta: dict[str, int]


class MilestoneTypes(Frozen):
    """Table 7: the set's tested milestones by type; Table 48: its milestones by answer schema (None where no
    milestone states one, as the release's do not; ``schema_unknown``: those that do not)."""

    families: int
    milestones: int
    types: dict[str, int]
    answers: int  # every milestone, Integrate too: Table 48's denominator
    schemas: dict[str, int] | None
    schema_unknown: int


class TypesByOutcome(Frozen):
    """Table 8, one outcome state of one student: its families, and how many of them have at least one
    tested milestone of each type."""

    n: int
    with_type: dict[str, int]


class BudgetChange(Frozen):
    """Tables 15 and 22: one student at two --max-tokens (two report columns, ``low`` and ``high``) on
    their common families: outcome counts at each and each family's outcome at the lower against the
    higher (``transitions``), and the strict milestone-test passes, the families whose pass flips, and
    the Composition-gap counts (None where either has no Stage 0 verdicts)."""

    low: str
    high: str
    max_tokens: tuple[int, int]
    n_common: int
    outcomes_low: dict[str, int]
    outcomes_high: dict[str, int]
    transitions: Transitions  # counts[a][b]: families with outcome a at the lower budget and b at the higher
    pass_low: int | None
    pass_high: int | None
    pass_flipped: int | None
    composition_low: int | None
    composition_high: int | None


class ReviewRow(Frozen):
    """Table 42, one student: its composition-gap families (strict milestone test) and the automated
    rubric review of them (`ladder audit review`). ``labeled``: those with a label; ``unlabeled``: not
    reviewed, or no readable reply (kept in the category, as the paper keeps them); ``flagged``: labeled
    a verifier or format error (``flagged_share``: of the labeled). ``before`` and ``after``: the
    category's share of the student's families, with the flagged ones and without. ``categories``: the
    labeled families by rubric category; ``categories_unflagged``: the same after removing the flagged."""

    families: int
    gap: int
    labeled: int
    unlabeled: int
    flagged: int
    flagged_share: float | None
    before: float | None
    after: float | None
    categories: dict[str, int]
    categories_unflagged: dict[str, int]


class LeakResidual(Frozen):
    """Appendix S's C3 leak residual, one student: its C3-only (Answers-Needed) solves on families where a
    tested milestone's gold answer restates the parent answer (`validators.family_leak_level`), by leak
    level; ``pids``: those families."""

    c3_only: int
    leaking: int  # of them, on a leaking family
    by_level: dict[str, int]
    pids: list[str]
class LeakDrop(Frozen):
    """A milestone the leak rule drops: its gold restates the reference answer (`Family.leaking`)."""

    pid: str
    target: str  # "m<i>", its Stage 0 target
    gold: str


class LeakRule(Frozen):
    """The milestones the leak rule left out of Stage 0, C2 and C3 (Appendix N, P.1), and the columns
    probed with them kept (``--keep-leaking``)."""

    dropped: list[LeakDrop]
    kept_by: list[str]


def leak_rule(families: Sequence[Family], kept_by: Sequence[str]) -> LeakRule:
    return LeakRule(dropped=[LeakDrop(pid=f.pid, target=f"m{i}", gold=f.milestones[i].answer)
                             for f in families for i in f.leaking or []], kept_by=list(kept_by))


class QFamily(Frozen):
    """The family of tests Benjamini-Hochberg adjusted together: the planned contrasts that ran, of every
    student the report shows (the paper adjusts its 6 models x 4 contrasts as one family of 24, Appendix E)."""

    tests: int
    students: int


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


def _ran(f: FamilyResults, cond: str) -> bool:
    return bool(f.ladder.get(cond))


def _stage0_ran(f: FamilyResults) -> bool:
    return any(f.stage0.values())


def _any_probe(fams: Sequence[FamilyResults], tau: int) -> list[bool]:
    """Per family, whether some probe that was run solved it ("Any probe": a rung not run solves nothing)."""
    return [parent_outcome(f.ladder, tau) is not Outcome.UNRECOVERED for f in fams]


def primitive_ran(fams: list[FamilyResults]) -> bool:
    """Whether any family was probed with C2-primitive: the rung's columns say "not run" otherwise."""
    return any(_ran(f, C2P.name) for f in fams)


def known_gap(f: FamilyResults, tau: int = 1, mode: str = "strict") -> Gap | None:
    """The five-way label, or None when it cannot be known: the parent outcome is unknown, or the family
    is not Direct and has no Stage 0 verdicts."""
    out = known_outcome(f, tau)
    if out is Outcome.DIRECT:
        return Gap.DIRECT
    if out is None or not _stage0_ran(f):
        return None
    return classify(f, tau, mode)


def missing_verdicts(ungraded: Iterable[str], failed: Iterable[str]) -> Missing:
    """The Missing table from the targets (conditions, "m<i>" for a milestone) of the ungraded rollouts
    and of the failed jobs."""
    def by_condition(targets: Iterable[str]) -> dict[str, int]:
        return dict(Counter(STAGE0 if t.startswith("m") else t for t in targets))
    u, f = by_condition(ungraded), by_condition(failed)
    return Missing(ungraded=u, failed=f, ungraded_total=sum(u.values()), failed_total=sum(f.values()))


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def condition_counts(fams: list[FamilyResults], tau: int = 1) -> dict[str, ConditionCount | None]:
    """Per condition, its counts; None for a condition no family has rollouts for ("not run")."""
    out: dict[str, ConditionCount | None] = {}
    for c in LADDER.every:
        run = [f for f in fams if _ran(f, c)]
        if not run:
            out[c] = None
            continue
        rolls = [r for f in run for r in f.ladder[c]]
        out[c] = ConditionCount(families_run=len(run), solved=sum(solved(f.ladder[c], tau) for f in run),
                                rollouts=len(rolls), per_rollout_rate=sum(rolls) / len(rolls))
    return out


def contrasts(fams: list[FamilyResults], tau: int = 1) -> list[Contrast]:
    """Every contrast of the declared conditions (`LADDER.contrasts`), in its place."""
    rows = []
    for name, ca, cb, planned in LADDER.contrasts:
        pairs = [f for f in fams if _ran(f, ca) and _ran(f, cb)]
        row = {"contrast": name, "a": ca, "b": cb, "planned": planned}
        if not pairs:
            rows.append(Contrast(**row, status=NOT_RUN, n=0))
            continue
        m = mcnemar_exact([solved(f.ladder[ca], tau) for f in pairs], [solved(f.ladder[cb], tau) for f in pairs])
        rows.append(Contrast(**row, status="ok", n=len(pairs), delta=m.only_a - m.only_b, **m.model_dump()))
    return adjust_planned({"": rows})[""]


def _planned_tests(contrasts: Mapping[str, list[Contrast]]) -> list[tuple[str, int]]:
    return [(s, i) for s, rows in contrasts.items() for i, c in enumerate(rows) if c.planned and c.status == "ok"]


def adjust_planned(contrasts: Mapping[str, list[Contrast]]) -> dict[str, list[Contrast]]:
    """Per student, its contrasts with ``p_bh``: Benjamini-Hochberg over the planned contrasts that ran of all
    the students together, one family as the paper's (None for the others)."""
    tests = _planned_tests(contrasts)
    q = dict(zip(tests, benjamini_hochberg([contrasts[s][i].p_value for s, i in tests])))
    return {s: [c.model_copy(update={"p_bh": q.get((s, i))}) for i, c in enumerate(rows)]
            for s, rows in contrasts.items()}


def q_family(contrasts: Mapping[str, list[Contrast]]) -> QFamily | None:
    """The family `adjust_planned` adjusts over (None: no planned contrast ran)."""
    tests = _planned_tests(contrasts)
    return QFamily(tests=len(tests), students=len({s for s, _ in tests})) if tests else None


def fingerprint_passing(fams: list[FamilyResults], tau: int = 1) -> dict[str, int] | None:
    """Table 14's last column: the outcome counts of the families that pass the strict milestone test;
    None where no family has Stage 0 verdicts."""
    if not any(_stage0_ran(f) for f in fams):
        return None
    return outcome_counts([f for f in fams if _stage0_ran(f) and milestone_test(f.stage0, "strict")], tau,
                          primitive_ran(fams))


def recovery_by_tau(fams: list[FamilyResults]) -> dict[str, dict[str, int] | None]:
    """Table 28: per condition, the families with at least tau correct of K, for each tau of TAUS; None for a
    condition no family has rollouts for."""
    return {c: ({str(t): sum(solved(f.ladder[c], t) for f in fams if _ran(f, c)) for t in TAUS}
                if any(_ran(f, c) for f in fams) else None) for c in LADDER.every}


def stage0_stats(fams: list[FamilyResults]) -> Stage0:
    run = [f for f in fams if _stage0_ran(f)]
    tested = [len([r for r in f.stage0.values() if r]) for f in run]
    ms_solved = sum(sum(1 for r in f.stage0.values() if r and any(r)) for f in run)
    return Stage0(
        stage0_run=bool(run),
        families_with_stage0=len(run),
        pass_strict=sum(milestone_test(f.stage0, "strict") for f in fams) if run else None,
        pass_fraction=sum(milestone_test(f.stage0, "fraction") for f in fams) if run else None,
        mean_tested_milestones=fmean(tested) if run else None,
        milestones_tested=sum(tested) if run else None,
        milestones_solved=ms_solved if run else None,
        milestone_solve_rate=ms_solved / sum(tested) if run and sum(tested) else None,
    )


def bootstrap_shares(fams: list[FamilyResults], tau: int = 1, seed: int = SEED,
                     n_resamples: int = N_RESAMPLES) -> dict[str, Interval]:
    """Table 12: family-level percentile CIs of each outcome and gap share, and of the any-probe share."""
    outs = [outcome_label(f, tau) for f in fams]
    gaps = [known_gap(f, tau, "strict") for f in fams]
    if not fams:
        return {}
    skip = set() if primitive_ran(fams) else {Outcome.PRIMITIVE_NEEDED.value, Gap.PRIMITIVE.value}  # "not run"
    ind = {o.value: [x == o.value for x in outs] for o in Outcome}
    if NOT_DETERMINED in outs:
        ind[NOT_DETERMINED] = [x == NOT_DETERMINED for x in outs]
    ind[ANY_PROBE] = _any_probe(fams, tau)
    if any(_stage0_ran(f) for f in fams):  # gap shares need the milestone test
        ind.update({g.value: [x is g for x in gaps] for g in Gap if g is not Gap.DIRECT})
    return {k: bootstrap_ci(v, n_resamples=n_resamples, seed=seed) for k, v in ind.items() if k not in skip}


def student_tables(fams: list[FamilyResults], tau: int = 1, mode: str = "strict", *,
                   seed: int = SEED, n_resamples: int = N_RESAMPLES) -> StudentTables:
    n = len(fams)
    ran = primitive_ran(fams)  # the primitive rung's keys only where it was run ("not run" in the tables)
    gaps = {g.value: 0 for g in ladder_gaps(ran)}
    gaps_fraction = {g.value: 0 for g in ladder_gaps(ran)}
    outs = outcome_counts(fams, tau, ran)
    not_classified = 0
    for f in fams:
        g = known_gap(f, tau, mode)
        if g is None:
            not_classified += 1
        else:
            gaps[g.value] += 1
            gaps_fraction[known_gap(f, tau, "fraction").value] += 1
    if not any(_stage0_ran(f) for f in fams):  # no milestone test: the gaps are not run, not zero
        gaps = {g: (v if g == Gap.DIRECT.value else None) for g, v in gaps.items()}
        gaps_fraction = {g: (v if g == Gap.DIRECT.value else None) for g, v in gaps_fraction.items()}
    conds = condition_counts(fams, tau)
    c1 = conds[C1.name]
    prim = outs[Outcome.PRIMITIVE_NEEDED.value] if ran else None
    direct = outs[Outcome.DIRECT.value]
    anyp = sum(_any_probe(fams, tau))
    s0 = stage0_stats(fams)
    return StudentTables(
        n=n, tau=tau, mode=mode,
        k=max((len(r) for f in fams for r in f.ladder.values()), default=None),
        k_stage0=max((len(r) for f in fams for r in f.stage0.values()), default=None) or None,
        taxonomy=gaps, taxonomy_fraction=gaps_fraction, outcomes=outs,
        taxonomy_not_classified=not_classified, outcomes_known={k: v for k, v in outs.items() if k != NOT_DETERMINED},
        outcome_undetermined=outs.get(NOT_DETERMINED, 0),
        milestone_test_pass=s0.pass_strict, primitive_run=ran, stage0=s0,
        summary=Summary(
            direct_accuracy=c1.per_rollout_rate if c1 else None,
            solved_directly=direct if c1 else None, solved_directly_share=_share(direct, n) if c1 else None,
            solved_any=anyp, solved_any_share=_share(anyp, n),
            added_by_milestones=anyp - direct if c1 else None,
            added_by_milestones_share=_share(anyp - direct, n) if c1 else None,
            solved_with_primitive=prim, solved_with_primitive_share=None if prim is None else _share(prim, n)),
        conditions=conds,
        not_run=[c for c, v in conds.items() if v is None],
        threshold_sweep={str(t): v for t, v in threshold_sweep(fams, TAUS).items()},
        contrasts=contrasts(fams, tau),
        bootstrap=bootstrap_shares(fams, tau, seed, n_resamples),
        fingerprint_passing=fingerprint_passing(fams, tau),
        recovery_by_tau=recovery_by_tau(fams),
    )


def _gap_transitions(a: list[FamilyResults], b: list[FamilyResults], tau: int) -> Transitions | None:
    """Five-way label transitions; None when either student has no Stage 0 verdicts at all."""
    if not any(_stage0_ran(f) for f in a) or not any(_stage0_ran(f) for f in b):
        return None
    la = [(g.value if (g := known_gap(f, tau)) else NOT_CLASSIFIED) for f in a]
    lb = [(g.value if (g := known_gap(f, tau)) else NOT_CLASSIFIED) for f in b]
    ran = primitive_ran(a) or primitive_ran(b)
    labels = [g.value for g in ladder_gaps(ran)] + ([NOT_CLASSIFIED] if NOT_CLASSIFIED in la + lb else [])
    return transition_matrix(la, lb, labels=labels)


def _outcome_transitions(a: list[FamilyResults], b: list[FamilyResults], tau: int) -> Transitions:
    """Each family's parent-probe outcome in ``a`` against the same family's in ``b`` (paired by position)."""
    la, lb = [outcome_label(f, tau) for f in a], [outcome_label(f, tau) for f in b]
    labels = [o.value for o in ladder_outcomes(primitive_ran(a) or primitive_ran(b))]
    return transition_matrix(la, lb, labels=labels + ([NOT_DETERMINED] if NOT_DETERMINED in la + lb else []))


def _ordering(a: list[bool], b: list[bool], n_resamples: int, seed: int) -> Ordering:
    return Ordering(a_gt_b=bootstrap_order(a, b, n_resamples, seed) if a else None,
                    b_gt_a=bootstrap_order(b, a, n_resamples, seed) if a else None, n_resamples=n_resamples, seed=seed)


def pair(a: list[FamilyResults], b: list[FamilyResults], tau: int = 1, *, names: tuple[str, str] = ("a", "b"),
         seed: int = SEED, n_resamples: int = N_RESAMPLES) -> Pair:
    bmap = {f.pid: f for f in b}
    common = [f for f in a if f.pid in bmap]
    fb = [bmap[f.pid] for f in common]
    oa = [parent_outcome(f.ladder, tau) for f in common]
    ob = [parent_outcome(f.ladder, tau) for f in fb]
    any_a, any_b = _any_probe(common, tau), _any_probe(fb, tau)
    return Pair(
        a=names[0], b=names[1], n_common=len(common), outcome_transitions=_outcome_transitions(common, fb, tau),
        gap_transitions=_gap_transitions(common, fb, tau),
        order_any_probe=_ordering(any_a, any_b, n_resamples, seed),
        order_direct=_ordering([x is Outcome.DIRECT for x in oa], [x is Outcome.DIRECT for x in ob], n_resamples, seed),
        mcnemar_any_probe=mcnemar_exact(any_a, any_b),
    )


def _common(students: Mapping[str, list[FamilyResults]], names: Iterable[str]) -> list[str]:
    """The pids every one of ``names`` has results on, in the first one's order."""
    names = list(names)
    have = [{f.pid for f in students[s]} for s in names[1:]]
    return [f.pid for f in students[names[0]] if all(f.pid in h for h in have)]


def ranks(students: Mapping[str, list[FamilyResults]], tau: int = 1, *, seed: int = SEED,
          n_resamples: int = N_RESAMPLES) -> dict[str, RankRow]:
    """Table 12's any-probe rank interval: every student ranked on the families all of them have, from
    paired family resamples; none for fewer than two students or no common family."""
    if len(students) < 2 or not (pids := _common(students, students)):
        return {}
    solved = [_any_probe(_by_pid(fams, pids), tau) for fams in students.values()]
    return {s: RankRow(any_probe=r, n_common=len(pids))
            for s, r in zip(students, bootstrap_ranks(solved, n_resamples, seed))}


def _by_pid(fams: list[FamilyResults], pids: list[str]) -> list[FamilyResults]:
    by = {f.pid: f for f in fams}
    return [by[p] for p in pids]


CHANGE_KEYS = (Outcome.DIRECT.value, Outcome.PRIMITIVE_NEEDED.value, Outcome.ROADMAP_NEEDED.value,
               Outcome.ANSWERS_NEEDED.value, ANY_PROBE)


def _counts(fams: list[FamilyResults], tau: int, primitive: bool) -> dict[str, int]:
    outs = Counter(outcome_label(f, tau) for f in fams)
    keys = [k for k in CHANGE_KEYS if primitive or k != Outcome.PRIMITIVE_NEEDED.value]
    return {k: (sum(_any_probe(fams, tau)) if k == ANY_PROBE else outs[k]) for k in keys}


def change(base: list[FamilyResults], other: list[FamilyResults], tau: int = 1) -> Change:
    """Table 18: the outcome counts of ``other`` and of ``base`` on their common families, and the change."""
    pids = _common({"b": base, "o": other}, ["b", "o"])
    fb, fo = _by_pid(base, pids), _by_pid(other, pids)
    ran = primitive_ran(fb) or primitive_ran(fo)
    cb, co = _counts(fb, tau, ran), _counts(fo, tau, ran)
    return Change(n_common=len(pids), base=cb, counts=co, delta={k: co[k] - cb[k] for k in cb})


TYPES = [t.value for t in MilestoneType if t is not MilestoneType.INTEGRATE]


def milestone_types(families: Sequence[Family]) -> MilestoneTypes:
    """Tables 7 and 48 of a set's families."""
    tested = [m for f in families for _, m in f.tested()]
    every = [m for f in families for m in f.milestones]
    schemas = Counter(m.answer_schema.value for m in every if m.answer_schema is not None)
    return MilestoneTypes(
        families=len(families), milestones=len(tested), types={t: sum(m.type.value == t for m in tested) for t in TYPES},
        answers=len(every), schemas={a.value: schemas[a.value] for a in AnswerSchema} if schemas else None,
        schema_unknown=len(every) - sum(schemas.values()))


def types_by_outcome(fams: list[FamilyResults], families: Sequence[Family], tau: int = 1) -> dict[str, TypesByOutcome]:
    """Table 8: per outcome state, the student's families (of ``families``) in it and how many have a tested
    milestone of each type."""
    types = {f.pid: {m.type.value for _, m in f.tested()} for f in families}
    out = {}
    for o in ladder_outcomes(primitive_ran(fams)):
        pids = [f.pid for f in fams if f.pid in types and outcome_label(f, tau) == o.value]
        out[o.value] = TypesByOutcome(n=len(pids), with_type={t: sum(t in types[p] for p in pids) for t in TYPES})
    return out


def _passes(fams: list[FamilyResults]) -> int | None:
    return sum(milestone_test(f.stage0, "strict") for f in fams) if any(_stage0_ran(f) for f in fams) else None


def budget_change(low: list[FamilyResults], high: list[FamilyResults], names: tuple[str, str],
                  max_tokens: tuple[int, int], tau: int = 1) -> BudgetChange:
    """Tables 15 and 22: one student's results at the lower budget (``low``) and the higher, on their
    common families."""
    pids = _common({"l": low, "h": high}, ["l", "h"])
    fl, fh = _by_pid(low, pids), _by_pid(high, pids)
    ran = primitive_ran(fl) or primitive_ran(fh)
    s0 = _passes(fl) is not None and _passes(fh) is not None

    def composition(fams: list[FamilyResults]) -> int:
        return sum(known_gap(f, tau) is Gap.COMPOSITION for f in fams)
    return BudgetChange(
        low=names[0], high=names[1], max_tokens=max_tokens, n_common=len(pids),
        outcomes_low=_counts(fl, tau, ran), outcomes_high=_counts(fh, tau, ran),
        transitions=_outcome_transitions(fl, fh, tau),
        pass_low=_passes(fl) if s0 else None, pass_high=_passes(fh) if s0 else None,
        pass_flipped=sum(milestone_test(a.stage0, "strict") != milestone_test(b.stage0, "strict")
                         for a, b in zip(fl, fh)) if s0 else None,
        composition_low=composition(fl) if s0 else None, composition_high=composition(fh) if s0 else None)


def review_row(fams: list[FamilyResults], labels: Mapping[str, RubricLabel | None], tau: int = 1) -> ReviewRow:
    """Table 42 of one student's results and its review's labels by pid (None: unreviewed)."""
    gap = [f.pid for f in fams if known_gap(f, tau) is Gap.COMPOSITION]
    got = [label for p in gap if (label := labels.get(p)) is not None]
    flagged = sum(label.flagged for label in got)
    n = len(fams)
    return ReviewRow(
        families=n, gap=len(gap), labeled=len(got), unlabeled=len(gap) - len(got), flagged=flagged,
        flagged_share=_share(flagged, len(got)), before=_share(len(gap), n), after=_share(len(gap) - flagged, n),
        categories={c: sum(label.category == c for label in got) for c in CATEGORIES},
        categories_unflagged={c: sum(label.category == c and not label.flagged for label in got) for c in CATEGORIES})


def leak_residual(fams: list[FamilyResults], leaking: Mapping[str, str], tau: int = 1) -> LeakResidual | None:
    """The leak residual of one student's results, given the set's leaking families (pid -> leak level);
    None where C3 was not run."""
    if not any(_ran(f, C3.name) for f in fams):
        return None
    c3_only = [f.pid for f in fams if known_outcome(f, tau) is Outcome.ANSWERS_NEEDED]
    hit = [p for p in c3_only if p in leaking]
    return LeakResidual(c3_only=len(c3_only), leaking=len(hit), pids=hit,
                        by_level=dict(Counter(leaking[p] for p in hit)))


def family_rows(fams: list[FamilyResults], tau: int = 1) -> list[FamilyRow]:
    """Per family: its outcome, milestone-test results and gaps as the tables count them, and n_correct of k
    per condition and per tested milestone."""
    rows = []
    for f in fams:
        s0 = _stage0_ran(f)
        strict, fraction = known_gap(f, tau, "strict"), known_gap(f, tau, "fraction")
        known = known_outcome(f, tau)
        rows.append(FamilyRow(
            pid=f.pid, outcome=outcome_label(f, tau), outcome_known=known.value if known else None,
            milestone_test_strict=milestone_test(f.stage0, "strict") if s0 else None,
            milestone_test_fraction=milestone_test(f.stage0, "fraction") if s0 else None,
            gap=strict.value if strict else None, gap_fraction=fraction.value if fraction else None,
            conditions={c: Count(n_correct=sum(r), k=len(r)) for c, r in f.ladder.items() if r},
            milestones={m: Count(n_correct=sum(r), k=len(r)) for m, r in f.stage0.items() if r}))
    return rows


def _with_benchmark(t: StudentTables, math_score: float | None) -> dict[str, Any]:
    """A student's tables as fields, Table 1's MATH score set to its benchmark's pass@1 (None: not run)."""
    return dict(t) | {"summary": t.summary.model_copy(update={"math_score": math_score})}


def report_tables(students: Mapping[str, list[FamilyResults]], tau: int = 1, roadmap_set: str | None = None,
           missing: Mapping[str, Missing | dict] | None = None, graders: Mapping[str, str] | None = None,
           ungradable: Mapping[str, str] | None = None,
           formats: Mapping[str, FormatAudit | dict] | None = None,
           settings: Mapping[str, str] | None = None, base: str | None = None,
           families: Sequence[Family] | None = None,
           budgets: Mapping[str, tuple[tuple[str, int], tuple[str, int]]] | None = None,
           order: Sequence[str] | None = None, benchmark: str | None = None,
           benchmarks: Mapping[str, float] | None = None,
           reviews: Mapping[str, Mapping[str, RubricLabel | None]] | None = None,
           leaking: Mapping[str, str] | None = None,
           containment: Mapping[str, Containment] | None = None, kept_leaking: Sequence[str] = (),
           spent: Mapping[str, Spent] | None = None) -> ReportTables:
    """Every table of one or more students (`write_report` names the arguments)."""
    missing, formats, settings, budgets = missing or {}, formats or {}, settings or {}, budgets or {}
    spent = spent or {}
    benchmarks, containment = benchmarks or {}, containment or {}
    names = list(students)
    base = base if base is not None or len(names) < 2 else names[0]
    tables = {s: student_tables(f, tau) for s, f in students.items()}
    shown = {s: t.contrasts for s, t in tables.items()}
    adjusted = adjust_planned(shown)
    return ReportTables(
        meta=Meta(tau=tau, seed=SEED, n_resamples=N_RESAMPLES, taus=list(TAUS), students=names,
                  roadmap_set=roadmap_set, graders=dict(graders or {}), ungradable_reference=dict(ungradable or {}),
                  base=base, order=None if order is None else list(order), benchmark=benchmark,
                  teacher_prompts=teacher_prompts(families or []), bh_family=q_family(shown)),
        students={s: StudentReport(**_with_benchmark(t, benchmarks.get(s)) | {"contrasts": adjusted[s]},
                                   missing=missing.get(s) or missing_verdicts([], []), format=formats.get(s),
                                   settings=settings.get(s), families=family_rows(students[s], tau),
                                   containment=containment.get(s), spent=spent.get(s))
                  for s, t in tables.items()},
        pairs=[pair(students[a], students[b], tau, names=(a, b)) for i, a in enumerate(names) for b in names[i + 1:]],
        ranks=ranks(students, tau),
        changes={s: change(students[base], f, tau) for s, f in students.items() if base is not None and s != base},
        milestone_types=None if families is None else milestone_types(families),
        leak_rule=None if families is None else leak_rule(families, kept_leaking),
        types_by_outcome={} if families is None else {s: types_by_outcome(f, families, tau) for s, f in students.items()},
        budgets={s: budget_change(students[lo], students[hi], (lo, hi), (mlo, mhi), tau)
                 for s, ((lo, mlo), (hi, mhi)) in budgets.items()},
        review={s: review_row(students[s], labels, tau) for s, labels in reviews.items() if s in students}
        if reviews else None,
        leak_residual=None if leaking is None else
        {s: row for s, f in students.items() if (row := leak_residual(f, leaking, tau)) is not None})
