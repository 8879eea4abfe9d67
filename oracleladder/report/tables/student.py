"""One student's tables: summary (Table 1), per-condition counts (Table 21), taxonomy and milestone test
(Tables 16, 14), threshold sweep (Table 9), recovery over tau (Table 28), bootstrap CIs (Table 12), the
verdicts it lacks, the format audit's records, and its per-family rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from statistics import fmean
from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from ...ladder.outcomes import (
    NOT_DETERMINED,
    FamilyResults,
    Gap,
    Outcome,
    known_outcome,
    ladder_gaps,
    milestone_test,
    outcome_counts,
    outcome_label,
    solved,
)
from ...schemas.conditions import C1, LADDER
from ..spent import Spent
from ..stats import Interval, bootstrap_ci, threshold_sweep
from .base import (
    ANY_PROBE,
    N_RESAMPLES,
    SEED,
    STAGE0,
    TAUS,
    Frozen,
    any_probe,
    known_gap,
    primitive_ran,
    ran,
    share_of,
    stage0_ran,
)
from .containment import Containment
from .contrasts import Contrast, contrasts
from .truncation import CUT_OFF, NO_BOX, REFUSED, PanelTruncation, Truncation


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
    not), ``refused`` (those of no_boxed the provider refused), ``ungraded`` and ``failed``."""

    n: int
    no_boxed: int
    no_boxed_trunc: int
    unparsable: int
    parsed_wrong: int
    parsed_correct: int
    truncated: int
    ungraded: int
    failed: int
    refused: int = 0  # a report.json from before refusals were counted apart has none

    @property
    def truncation(self) -> Truncation:
        """Its bucketed answers, those cut off, and those with no box by why."""
        return Truncation(answers=self.n, cut_off=self.truncated,
                          unreadable={CUT_OFF: self.no_boxed_trunc, REFUSED: self.refused,
                                      NO_BOX: self.no_boxed - self.refused})


class FormatAudit(Frozen):
    """A student's format audit (`audit.format` reads it from the store): its rows by condition, the
    conditions to warn about (too many answers cut off) and the ``--max-tokens`` of the runs."""

    max_tokens: list[int]
    table: dict[str, FormatRow]
    cut_off: list[str]
    grammars: list[str] = []  # the grammars (GBNF) that constrained the decoding of the runs, if any

    def warnings(self, student: str) -> list[str]:
        """A line per condition in ``cut_off``, in the words of every surface (`Truncation.said`)."""
        return [self.table[name].truncation.said(f"{student}, {LADDER.label(name)}", self.max_tokens)
                for name in self.cut_off]

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
    # an imported panel's answers cut off and unreadable, as its records said (a probed student's: `format`)
    panel_truncation: PanelTruncation | None = None

    def warnings(self, student: str) -> list[str]:
        """report.md's banner and the HTML's (`cut_off_warnings`)."""
        return cut_off_warnings(student, self.format, self.panel_truncation)


def cut_off_warnings(student: str, audit: FormatAudit | None, panel: PanelTruncation | None) -> list[str]:
    """A line per condition of a student's answers cut off (its format audit's: over 10%) or, of an imported
    panel, cut off or unreadable as `Truncation.warns` says: every surface that shows the report's rates."""
    return [*(audit.warnings(student) if audit else []), *(panel.warnings(student) if panel else [])]


def missing_verdicts(ungraded: Iterable[str], failed: Iterable[str]) -> Missing:
    """The Missing table from the targets (conditions, "m<i>" for a milestone) of the ungraded rollouts
    and of the failed jobs."""
    def by_condition(targets: Iterable[str]) -> dict[str, int]:
        return dict(Counter(STAGE0 if t.startswith("m") else t for t in targets))
    u, f = by_condition(ungraded), by_condition(failed)
    return Missing(ungraded=u, failed=f, ungraded_total=sum(u.values()), failed_total=sum(f.values()))


def condition_counts(fams: list[FamilyResults], tau: int = 1) -> dict[str, ConditionCount | None]:
    """Per condition, its counts; None for a condition no family has rollouts for ("not run")."""
    out: dict[str, ConditionCount | None] = {}
    for c in LADDER.every:
        run = [f for f in fams if ran(f, c)]
        if not run:
            out[c] = None
            continue
        rolls = [r for f in run for r in f.ladder[c]]
        out[c] = ConditionCount(families_run=len(run), solved=sum(solved(f.ladder[c], tau) for f in run),
                                rollouts=len(rolls), per_rollout_rate=sum(rolls) / len(rolls))
    return out


def fingerprint_passing(fams: list[FamilyResults], tau: int = 1) -> dict[str, int] | None:
    """Table 14's last column: the outcome counts of the families that pass the strict milestone test;
    None where no family has Stage 0 verdicts."""
    if not any(stage0_ran(f) for f in fams):
        return None
    return outcome_counts([f for f in fams if stage0_ran(f) and milestone_test(f.stage0, "strict")], tau,
                          primitive_ran(fams))


def recovery_by_tau(fams: list[FamilyResults]) -> dict[str, dict[str, int] | None]:
    """Table 28: per condition, the families with at least tau correct of K, for each tau of TAUS; None for a
    condition no family has rollouts for."""
    return {c: ({str(t): sum(solved(f.ladder[c], t) for f in fams if ran(f, c)) for t in TAUS}
                if any(ran(f, c) for f in fams) else None) for c in LADDER.every}


def stage0_stats(fams: list[FamilyResults]) -> Stage0:
    run = [f for f in fams if stage0_ran(f)]
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
    ind[ANY_PROBE] = any_probe(fams, tau)
    if any(stage0_ran(f) for f in fams):  # gap shares need the milestone test
        ind.update({g.value: [x is g for x in gaps] for g in Gap if g is not Gap.DIRECT})
    return {k: bootstrap_ci(v, n_resamples=n_resamples, seed=seed) for k, v in ind.items() if k not in skip}


def _shown(gaps: dict[str, int], tested: bool) -> dict[str, int | None]:
    """Gap counts as the tables give them: with no milestone test the gaps but Direct are not run, not zero."""
    return {g: v if tested or g == Gap.DIRECT.value else None for g, v in gaps.items()}


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
            fraction = known_gap(f, tau, "fraction")
            assert fraction is not None  # whether a gap is known does not depend on the mode (known_gap)
            gaps[g.value] += 1
            gaps_fraction[fraction.value] += 1
    tested = any(stage0_ran(f) for f in fams)
    conds = condition_counts(fams, tau)
    c1 = conds[C1.name]
    prim = outs[Outcome.PRIMITIVE_NEEDED.value] if ran else None
    direct = outs[Outcome.DIRECT.value]
    anyp = sum(any_probe(fams, tau))
    s0 = stage0_stats(fams)
    return StudentTables(
        n=n, tau=tau, mode=mode,
        k=max((len(r) for f in fams for r in f.ladder.values()), default=None),
        k_stage0=max((len(r) for f in fams for r in f.stage0.values()), default=None) or None,
        taxonomy=_shown(gaps, tested), taxonomy_fraction=_shown(gaps_fraction, tested), outcomes=outs,
        taxonomy_not_classified=not_classified, outcomes_known={k: v for k, v in outs.items() if k != NOT_DETERMINED},
        outcome_undetermined=outs.get(NOT_DETERMINED, 0),
        milestone_test_pass=s0.pass_strict, primitive_run=ran, stage0=s0,
        summary=Summary(
            direct_accuracy=c1.per_rollout_rate if c1 else None,
            solved_directly=direct if c1 else None, solved_directly_share=share_of(direct, n) if c1 else None,
            solved_any=anyp, solved_any_share=share_of(anyp, n),
            added_by_milestones=anyp - direct if c1 else None,
            added_by_milestones_share=share_of(anyp - direct, n) if c1 else None,
            solved_with_primitive=prim, solved_with_primitive_share=None if prim is None else share_of(prim, n)),
        conditions=conds,
        not_run=[c for c, v in conds.items() if v is None],
        threshold_sweep={str(t): v for t, v in threshold_sweep(fams, TAUS).items()},
        contrasts=contrasts(fams, tau),
        bootstrap=bootstrap_shares(fams, tau, seed, n_resamples),
        fingerprint_passing=fingerprint_passing(fams, tau),
        recovery_by_tau=recovery_by_tau(fams),
    )


def family_rows(fams: list[FamilyResults], tau: int = 1) -> list[FamilyRow]:
    """Per family: its outcome, milestone-test results and gaps as the tables count them, and n_correct of k
    per condition and per tested milestone."""
    rows = []
    for f in fams:
        s0 = stage0_ran(f)
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
