"""One table a student in report.md: Tables 1, 21, 16, 14, 9, 28 and 12."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...ladder.outcomes import NOT_DETERMINED, Gap, Outcome
from ...schemas.conditions import LADDER
from ..palette import NOT_CLASSIFIED, n_families
from ..stats import Interval
from ..tables import ANY_PROBE, NOT_RUN, ReportTables, StudentReport
from .cells import NONE, pct, table
from .head import at


def summary(r: ReportTables) -> list[str]:
    """Table 1."""
    rows = [[s, t.n, pct(m.direct_accuracy), pct(m.solved_directly_share), pct(m.solved_with_primitive_share),
             pct(m.solved_any_share), pct(m.added_by_milestones_share), pct(m.math_score)]
            for s, t in r.students.items() for m in (t.summary,)]
    return ["## Same-set summary (Table 1)", "", *at(r),
            *table(["Model", "Families", "Direct accuracy", "Solved directly", "Primitive-Needed",
                    "Solved by any probe", "Added by milestones", "MATH score"], rows),
            "", "Direct accuracy is per-rollout C1 success; the other shares are family-level at "
            f">= {r.meta.tau} of K. Solved by any probe = Direct + Primitive-Needed (where C2-primitive was run) + "
            "Roadmap-Needed + Answers-Needed. "
            + (f"MATH score: pass@1 of the plain benchmark probe '{r.meta.benchmark}' (`ladder benchmark`) at the "
               "same settings." if r.meta.benchmark else "MATH score: an external comparator, a plain benchmark "
               "probe with no roadmap (`ladder benchmark`, then `ladder report --benchmark NAME`)."), ""]


def conditions(r: ReportTables) -> list[str]:
    """Table 21: families solved per condition, then each condition's per-rollout success rate."""
    rows: list[list[object]] = []
    columns = LADDER.columns
    for s, t in r.students.items():
        cells = []
        for c in columns:
            v = t.conditions[c]
            cells.append(NOT_RUN if v is None else (f"{v.solved}" if v.families_run == t.n
                                                    else f"{v.solved} (of {v.families_run} run)"))
        any_run = any(t.conditions[c] is not None for c in LADDER.parent_probes)
        rows.append([s, *cells, t.summary.solved_any if any_run else NOT_RUN])
    rates = [[s] + [NOT_RUN if (v := t.conditions[c]) is None else f"{v.per_rollout_rate:.3f}" for c in columns]
             for s, t in r.students.items()]
    names = [LADDER[c].short for c in columns]
    return [f"## Families solved per condition (Table 21, >= {r.meta.tau} of K)", "", *at(r),
            *table(["Model"] + names + ["Any probe"], rows),
            "", "Per-rollout success rate (sr):", "", *table(["Model"] + names, rates), ""]


def taxonomy(r: ReportTables) -> list[str]:
    """Table 16 with the milestone-test statistics beside it, then the taxonomy under the fraction test."""
    cols = [g.value for g in Gap]  # the Primitive-gap column says "not run" where C2-primitive was not
    unlabeled = any(t.taxonomy_not_classified and t.stage0.stage0_run for t in r.students.values())
    rows: list[list[object]] = []
    for s, t in r.students.items():
        s0 = t.stage0
        extra = [t.taxonomy_not_classified] if unlabeled else []
        if not s0.stage0_run:
            rows.append([s, t.taxonomy["Direct"], *[NOT_RUN] * (len(cols) - 1 + len(extra)), *[NOT_RUN] * 4])
            continue
        rows.append([s, *[t.taxonomy.get(c, NOT_RUN) for c in cols], *extra,
                     s0.pass_strict, s0.pass_fraction, f"{s0.mean_tested_milestones:.2f}",
                     f"{pct(s0.milestone_solve_rate)} ({s0.milestones_solved}/{s0.milestones_tested})"])
    fraction: list[list[object]] = [
        [s, *([t.taxonomy_fraction.get(c, NOT_RUN) for c in cols] if t.stage0.stage0_run else
              [t.taxonomy_fraction["Direct"], *[NOT_RUN] * (len(cols) - 1)])] for s, t in r.students.items()]
    return [f"## Reasoning-gap taxonomy (Table 16, strict milestone test, tau = {r.meta.tau})", "", *at(r),
            *table(["Model"] + cols + ([NOT_CLASSIFIED] if unlabeled else [])
                   + ["MS-test pass (strict)", "MS-test pass (fraction)",
                      "Tested milestones / family", "Milestone solve rate"], rows),
            "", "Strict: every tested milestone solved >= 1 of K alone. Fraction: at least half of them. "
            "Milestone solve rate: tested milestones solved >= 1 of K, over all tested milestones.", "",
            "Taxonomy under the fraction milestone test (secondary readout):", "",
            *table(["Model"] + cols, fraction), ""]


def _outcome_columns(counts: Iterable[Mapping[str, object]]) -> list[str]:
    """Every outcome, and "Not determined" where some count has it."""
    return [o.value for o in Outcome] + ([NOT_DETERMINED] if any(NOT_DETERMINED in c for c in counts) else [])


def threshold_sweep(r: ReportTables) -> list[str]:
    """Table 9, one table per student."""
    L = ["## Threshold sweep (Table 9)", "", *at(r)]
    for s, t in r.students.items():
        L += [f"**{s}** (n = {t.n})", ""]
        cols = _outcome_columns(t.threshold_sweep.values())
        L += table(["tau"] + cols,
                   [[tau + (" (default)" if tau == "1" else "")] + [row.get(o, NOT_RUN) for o in cols]
                    for tau, row in t.threshold_sweep.items()])
        L.append("")
    return L


def _fingerprint(counts: Mapping[str, int]) -> str:
    return "/".join(str(counts[o]) for o in _outcome_columns([counts]) if o in counts)


def stage0_fingerprint(r: ReportTables) -> list[str]:
    """Table 14: milestone solve rate, families passing the strict milestone test, and the outcome fingerprint
    of all families and of the passing ones."""
    rows = [[s, NOT_RUN, NOT_RUN, _fingerprint(t.outcomes), NOT_RUN] if t.fingerprint_passing is None else
            [s, pct(t.stage0.milestone_solve_rate), t.stage0.pass_strict, _fingerprint(t.outcomes),
             _fingerprint(t.fingerprint_passing)] for s, t in r.students.items()]
    order = "/".join(o for o in _outcome_columns(t.outcomes for t in r.students.values())
                     if any(o in t.outcomes for t in r.students.values()))
    return [f"## Stage 0 milestone solvability and fingerprint (Table 14, tau = {r.meta.tau})", "", *at(r),
            *table(["Model", "Milestone solve rate", "Passing families", "All families", "Passing families only"],
                   rows),
            "", f"Fingerprint cells: {order}. Passing: every tested milestone solved >= 1 of K alone (strict).", ""]


def recovery_by_tau(r: ReportTables) -> list[str]:
    """Table 28: per student, families each condition recovers at each tau."""
    L = ["## Family-level recovery per condition as tau varies (Table 28)", "", *at(r),
         "Families with at least tau correct of K under the condition (tau = 1 is pass@K).", ""]
    for s, t in r.students.items():
        taus = list(next((v for v in t.recovery_by_tau.values() if v), {}))
        rows = [[LADDER[c].short] + ([NOT_RUN] * len(taus) if (v := t.recovery_by_tau.get(c)) is None
                                        else [v[x] for x in taus]) for c in LADDER.columns]
        L += [f"**{s}** (n = {t.n})", ""] + (table(["Condition"] + [f"tau = {x}" for x in taus], rows) if taus
                                              else ["No condition was run."]) + [""]
    return L


def _interval(i: Interval) -> str:
    return f"{pct(i.point)} [{100 * i.lo:.1f}, {100 * i.hi:.1f}]"


def bootstrap(r: ReportTables) -> list[str]:
    """Table 12: shares with their intervals, then the paper's count form (direct and any-probe counts) with
    the any-probe rank interval where there are two or more students."""
    keys = _outcome_columns(t.bootstrap for t in r.students.values()) + [ANY_PROBE] + [g.value for g in Gap if g is not Gap.DIRECT]
    rows = [[s] + [_interval(t.bootstrap[k]) if k in t.bootstrap else (NOT_RUN if t.bootstrap else NONE)
                   for k in keys] for s, t in r.students.items()]

    def count(t: StudentReport, key: str) -> str:
        i = t.bootstrap.get(key)
        return NONE if i is None else f"{i.point * t.n:.1f} [{i.lo * t.n:.0f}, {i.hi * t.n:.0f}]"

    def rank(s: str) -> str:
        x = r.ranks.get(s)
        return NONE if x is None else f"{x.any_probe.point} [{x.any_probe.lo}, {x.any_probe.hi}]"
    counts = [[s, t.n, count(t, Outcome.DIRECT.value), count(t, ANY_PROBE)] + ([rank(s)] if r.ranks else [])
              for s, t in r.students.items()]
    n_common = next(iter(r.ranks.values())).n_common if r.ranks else 0
    ranked = (f"Any-probe rank: 1 is the most families solved by any probe (ties share the better rank), on the "
              f"{n_families(n_common)} every model has, with its [2.5, 97.5] percentile range over the same resamples."
              if r.ranks else "Any-probe rank: needs two or more students with common families.")
    return [f"## Family-level bootstrap CIs (Table 12: {r.meta.n_resamples} resamples, seed {r.meta.seed})", "",
            *at(r), "Share of families: point estimate [2.5%, 97.5%] percentile interval.", "",
            *table(["Model"] + keys, rows), "", "Counts (families): point [2.5, 97.5] percentile interval.", "",
            *table(["Model", "Families", "Direct", "Any probe"] + (["Any-probe rank"] if r.ranks else []), counts),
            "", ranked, ""]
