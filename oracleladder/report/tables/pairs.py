"""Two result sets side by side: two students on their common families (Tables 13, 18, 38, the rank column
of Table 12) and one student at two budgets (Tables 15 and 22)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ...ladder.outcomes import (
    NOT_DETERMINED,
    FamilyResults,
    Gap,
    Outcome,
    ladder_gaps,
    ladder_outcomes,
    milestone_test,
    outcome_label,
    parent_outcome,
)
from ..palette import NOT_CLASSIFIED
from ..stats import McNemar, Rank, Transitions, bootstrap_order, bootstrap_ranks, mcnemar_exact, transition_matrix
from .base import (
    ANY_PROBE,
    N_RESAMPLES,
    SEED,
    Frozen,
    any_probe,
    by_pid,
    common_pids,
    gap_label,
    known_gap,
    primitive_ran,
    stage0_ran,
)


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


def _gap_transitions(a: list[FamilyResults], b: list[FamilyResults], tau: int) -> Transitions | None:
    """Five-way label transitions; None when either student has no Stage 0 verdicts at all."""
    if not any(stage0_ran(f) for f in a) or not any(stage0_ran(f) for f in b):
        return None
    la, lb = [gap_label(f, tau) for f in a], [gap_label(f, tau) for f in b]
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
    any_a, any_b = any_probe(common, tau), any_probe(fb, tau)
    return Pair(
        a=names[0], b=names[1], n_common=len(common), outcome_transitions=_outcome_transitions(common, fb, tau),
        gap_transitions=_gap_transitions(common, fb, tau),
        order_any_probe=_ordering(any_a, any_b, n_resamples, seed),
        order_direct=_ordering([x is Outcome.DIRECT for x in oa], [x is Outcome.DIRECT for x in ob], n_resamples, seed),
        mcnemar_any_probe=mcnemar_exact(any_a, any_b),
    )


def ranks(students: Mapping[str, list[FamilyResults]], tau: int = 1, *, seed: int = SEED,
          n_resamples: int = N_RESAMPLES) -> dict[str, RankRow]:
    """Table 12's any-probe rank interval: every student ranked on the families all of them have, from
    paired family resamples; none for fewer than two students or no common family."""
    if len(students) < 2 or not (pids := common_pids(students, students)):
        return {}
    solved = [any_probe(by_pid(fams, pids), tau) for fams in students.values()]
    return {s: RankRow(any_probe=r, n_common=len(pids))
            for s, r in zip(students, bootstrap_ranks(solved, n_resamples, seed))}


CHANGE_KEYS = (Outcome.DIRECT.value, Outcome.PRIMITIVE_NEEDED.value, Outcome.ROADMAP_NEEDED.value,
               Outcome.ANSWERS_NEEDED.value, ANY_PROBE)


def _counts(fams: list[FamilyResults], tau: int, primitive: bool) -> dict[str, int]:
    outs = Counter(outcome_label(f, tau) for f in fams)
    keys = [k for k in CHANGE_KEYS if primitive or k != Outcome.PRIMITIVE_NEEDED.value]
    return {k: (sum(any_probe(fams, tau)) if k == ANY_PROBE else outs[k]) for k in keys}


def change(base: list[FamilyResults], other: list[FamilyResults], tau: int = 1) -> Change:
    """Table 18: the outcome counts of ``other`` and of ``base`` on their common families, and the change."""
    pids = common_pids({"b": base, "o": other}, ["b", "o"])
    fb, fo = by_pid(base, pids), by_pid(other, pids)
    ran = primitive_ran(fb) or primitive_ran(fo)
    cb, co = _counts(fb, tau, ran), _counts(fo, tau, ran)
    return Change(n_common=len(pids), base=cb, counts=co, delta={k: co[k] - cb[k] for k in cb})


def _passes(fams: list[FamilyResults]) -> int | None:
    return sum(milestone_test(f.stage0, "strict") for f in fams) if any(stage0_ran(f) for f in fams) else None


def budget_change(low: list[FamilyResults], high: list[FamilyResults], names: tuple[str, str],
                  max_tokens: tuple[int, int], tau: int = 1) -> BudgetChange:
    """Tables 15 and 22: one student's results at the lower budget (``low``) and the higher, on their
    common families."""
    pids = common_pids({"l": low, "h": high}, ["l", "h"])
    fl, fh = by_pid(low, pids), by_pid(high, pids)
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
