"""Diagnosis report for one or more students: Markdown, JSON and PNG plots.

Tables follow the paper: same-set summary (Table 1), per-condition solved counts (Table 21),
reasoning-gap taxonomy with milestone-test statistics (Table 16 / Table 14), threshold sweep
(Table 9), specificity contrasts with paired exact McNemar (Tables 10-11), family-level bootstrap
CIs (Table 12) and, for exactly two students, the outcome transition matrix (Table 38) and the
bootstrap pairwise ordering (Table 13). Plots: taxonomy stacked bars (Figure 4) and the outcome
fingerprint (Figure 8). Conditions that were not run are reported as "not run", never as zeros.
The primitive rung (docs/primitive.md: Primitive-Needed, Primitive-gap, C2-primitive and its control)
appears in Tables 1, 9, 11, 12, 16 and 21 and in the plots where C2-primitive was run, "not run" elsewhere.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..audit import format as format_audit  # noqa: E402
from ..schemas.models import CONDITION_NAMES, CONDITIONS, PRIMITIVE_CONDITIONS  # noqa: E402
from ..ladder.outcomes import (FamilyResults, Gap, Outcome, classify, ladder_gaps, ladder_outcomes,  # noqa: E402
                       milestone_test, parent_outcome, solved)
from .stats import bootstrap_ci, bootstrap_order, mcnemar_exact, threshold_sweep, transition_matrix  # noqa: E402

SEED = 42
N_RESAMPLES = 1000
TAUS = (1, 2, 3, 4, 5)
NOT_RUN = "not run"

COND_LABEL = CONDITION_NAMES
TABLE21_ORDER = ("C1_direct", "C2_random", "C2_generic", "C2_primitive_random", "C2_primitive", "C2_descriptions",
                 "C3_mismatched", "C3_gold_answers")
# (name, correct condition, control condition, planned Table 11 contrast?)
CONTRASTS = (
    ("C2 vs C1", "C2_descriptions", "C1_direct", True),
    ("C2 vs C2-random", "C2_descriptions", "C2_random", True),
    ("C2 vs C2-generic", "C2_descriptions", "C2_generic", True),
    ("C3 vs C3-mismatched", "C3_gold_answers", "C3_mismatched", True),
    ("C2-primitive vs C2-primitive-random", "C2_primitive", "C2_primitive_random", True),  # its specificity check
    ("C2-random vs C1", "C2_random", "C1_direct", False),
    ("C2-generic vs C1", "C2_generic", "C1_direct", False),
    ("C3-mismatched vs C1", "C3_mismatched", "C1_direct", False),
    ("C3 vs C1", "C3_gold_answers", "C1_direct", False),
    ("C2-primitive vs C1", "C2_primitive", "C1_direct", False),
    ("C2-primitive-random vs C1", "C2_primitive_random", "C1_direct", False),
)
# Shared colours: Direct is one grey in both plots; a gap of a family that passes the milestone test takes
# its parent-probe outcome's colour (Roadmap-gap = Roadmap-Needed, Milestone-execution-gap = Answers-Needed,
# Composition-gap = Unrecovered); the two fail-the-test gaps are dark (purple, dark red).
GAP_COLORS = {Gap.DIRECT: "#8c8c8c", Gap.PRIMITIVE: "#ff7f0e", Gap.ROADMAP: "#1f77b4", Gap.MS_EXEC: "#2ca02c",
              Gap.COMPOSITION: "#d62728", Gap.MISSING_MS: "#6a3d9a", Gap.CAPABILITY: "#7b1e1e"}
OUT_COLORS = {Outcome.DIRECT: "#8c8c8c", Outcome.PRIMITIVE_NEEDED: "#ff7f0e", Outcome.ROADMAP_NEEDED: "#1f77b4",
              Outcome.ANSWERS_NEEDED: "#2ca02c", Outcome.UNRECOVERED: "#d62728"}
# what each category means, for plot legends (paper Section 4.3 / Figure 4 and Figure 8)
GAP_HELP = {Gap.DIRECT: "C1 solves", Gap.PRIMITIVE: "MS test pass, C2-primitive solves", Gap.ROADMAP: "MS test pass, C2 solves",
            Gap.MS_EXEC: "MS test pass, C3 solves", Gap.COMPOSITION: "MS test pass, C1-C3 fail",
            Gap.MISSING_MS: "MS test fail, C2 or C3 solves", Gap.CAPABILITY: "MS test fail, C1-C3 fail"}
OUT_HELP = {Outcome.DIRECT: "C1 solves", Outcome.PRIMITIVE_NEEDED: "C2-primitive solves, C1 does not",
            Outcome.ROADMAP_NEEDED: "C2 solves, C1 does not",
            Outcome.ANSWERS_NEEDED: "C3 solves, C1 and C2 do not", Outcome.UNRECOVERED: "C1, C2 and C3 fail"}
NOT_CLASSIFIED = "Not classified"
LADDER = ("C1_direct", "C2_descriptions", "C3_gold_answers")


def _ran(f: FamilyResults, cond: str) -> bool:
    return bool(f.ladder.get(cond))


def _stage0_ran(f: FamilyResults) -> bool:
    return any(f.stage0.values())


PRIMITIVE = "C2_primitive"
# the rungs an outcome is read from (the primitive rung, where it was run, is read on the way: see outcomes.py)
_RUNGS_READ = {Outcome.DIRECT: LADDER[:1], Outcome.PRIMITIVE_NEEDED: (LADDER[0], PRIMITIVE),
               Outcome.ROADMAP_NEEDED: LADDER[:2], Outcome.ANSWERS_NEEDED: LADDER, Outcome.UNRECOVERED: LADDER}


def primitive_ran(fams: list[FamilyResults]) -> bool:
    """Whether any family was probed with C2-primitive: the rung's columns say "not run" otherwise."""
    return any(_ran(f, PRIMITIVE) for f in fams)


def known_outcome(f: FamilyResults, tau: int = 1) -> Outcome | None:
    """Algorithm 3, but None when a ladder rung it has to look at was not run (the outcome is unknown,
    not Unrecovered): C1 not run, or C1 fails and C2 not run, or C1 and C2 fail and C3 not run."""
    out = parent_outcome(f.ladder, tau)
    return out if all(_ran(f, c) for c in _RUNGS_READ[out]) else None


def known_gap(f: FamilyResults, tau: int = 1, mode: str = "strict") -> Gap | None:
    """The five-way label, or None when it cannot be known: the parent outcome is unknown, or the family
    is not Direct and has no Stage 0 verdicts."""
    out = known_outcome(f, tau)
    if out is Outcome.DIRECT:
        return Gap.DIRECT
    if out is None or not _stage0_ran(f):
        return None
    return classify(f, tau, mode)


STAGE0 = "Stage 0"


def missing_counts(ungraded: Iterable[str], failed: Iterable[str]) -> dict:
    """Verdicts the tables lack, by condition (the Stage 0 milestones "m<i>" together): rollouts whose
    grading failed (`ladder regrade` grades them) and jobs whose call failed (a rerun asks again)."""
    def by_condition(targets: Iterable[str]) -> dict[str, int]:
        return dict(Counter(STAGE0 if t.startswith("m") else t for t in targets))
    u, f = by_condition(ungraded), by_condition(failed)
    return {"ungraded": u, "failed": f, "ungraded_total": sum(u.values()), "failed_total": sum(f.values())}


def _pct(x: float | None) -> str:
    return NOT_RUN if x is None else f"{100 * x:.1f}%"


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def condition_counts(fams: list[FamilyResults], tau: int = 1) -> dict[str, dict | None]:
    """Table 21 / Table 10: per condition, families run, families solved (>= tau of K), per-rollout rate.

    A condition no family has rollouts for is None ("not run")."""
    out: dict[str, dict | None] = {}
    for c in CONDITIONS + PRIMITIVE_CONDITIONS:
        run = [f for f in fams if _ran(f, c)]
        if not run:
            out[c] = None
            continue
        rolls = [r for f in run for r in f.ladder[c]]
        out[c] = {"families_run": len(run), "solved": sum(solved(f.ladder[c], tau) for f in run),
                  "rollouts": len(rolls), "per_rollout_rate": sum(rolls) / len(rolls)}
    return out


def contrasts(fams: list[FamilyResults], tau: int = 1) -> list[dict]:
    """Tables 10-11: paired exact McNemar on families where both conditions were run."""
    rows = []
    for name, ca, cb, planned in CONTRASTS:
        pairs = [f for f in fams if _ran(f, ca) and _ran(f, cb)]
        row = {"contrast": name, "a": ca, "b": cb, "planned": planned}
        if not pairs:
            row.update({"status": NOT_RUN, "n": 0})
        else:
            m = mcnemar_exact([solved(f.ladder[ca], tau) for f in pairs], [solved(f.ladder[cb], tau) for f in pairs])
            row.update({"status": "ok", "n": len(pairs), "delta": m["only_a"] - m["only_b"], **m})
        rows.append(row)
    return rows


def stage0_stats(fams: list[FamilyResults]) -> dict:
    """Milestone-test statistics beside the taxonomy (Table 14 / Appendix P.4)."""
    run = [f for f in fams if any(f.stage0.values())]
    tested = [len([r for r in f.stage0.values() if r]) for f in run]
    ms_solved = sum(sum(1 for r in f.stage0.values() if r and any(r)) for f in run)
    return {
        "stage0_run": bool(run),
        "families_with_stage0": len(run),
        "pass_strict": sum(milestone_test(f.stage0, "strict") for f in fams) if run else None,
        "pass_fraction": sum(milestone_test(f.stage0, "fraction") for f in fams) if run else None,
        "mean_tested_milestones": float(np.mean(tested)) if run else None,
        "milestones_tested": sum(tested),
        "milestones_solved": ms_solved,
        "milestone_solve_rate": ms_solved / sum(tested) if run and sum(tested) else None,
    }


def bootstrap_shares(fams: list[FamilyResults], tau: int = 1, seed: int = SEED,
                     n_resamples: int = N_RESAMPLES) -> dict[str, dict]:
    """Table 12: family-level percentile CIs of each outcome and gap share, and of the any-probe share."""
    outs = [parent_outcome(f.ladder, tau) for f in fams]
    gaps = [known_gap(f, tau, "strict") for f in fams]
    res: dict[str, dict] = {}
    if not fams:
        return res
    skip = set() if primitive_ran(fams) else {Outcome.PRIMITIVE_NEEDED.value, Gap.PRIMITIVE.value}  # "not run"
    ind = {o.value: [x is o for x in outs] for o in Outcome}
    ind["Any probe"] = [x is not Outcome.UNRECOVERED for x in outs]
    if any(_stage0_ran(f) for f in fams):  # gap shares need the milestone test
        ind.update({g.value: [x is g for x in gaps] for g in Gap if g is not Gap.DIRECT})
    for k, v in ind.items():
        if k in skip:
            continue
        res[k] = bootstrap_ci(v, stat=np.mean, n_resamples=n_resamples, seed=seed)
    return res


def summarize(fams: list[FamilyResults], tau: int = 1, mode: str = "strict", *,
              seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict:
    n = len(fams)
    ran = primitive_ran(fams)  # the primitive rung's keys only where it was run ("not run" in the tables)
    gaps = {g.value: 0 for g in ladder_gaps(ran)}
    gaps_fraction = {g.value: 0 for g in ladder_gaps(ran)}
    outs = {o.value: 0 for o in ladder_outcomes(ran)}
    known_outs = {o.value: 0 for o in ladder_outcomes(ran)}
    not_classified = undetermined = 0
    for f in fams:
        g = known_gap(f, tau, mode)
        if g is None:
            not_classified += 1
        else:
            gaps[g.value] += 1
            gaps_fraction[known_gap(f, tau, "fraction").value] += 1
        outs[parent_outcome(f.ladder, tau).value] += 1
        o = known_outcome(f, tau)
        if o is None:
            undetermined += 1
        else:
            known_outs[o.value] += 1
    conds = condition_counts(fams, tau)
    c1 = conds["C1_direct"]
    prim = outs[Outcome.PRIMITIVE_NEEDED.value] if ran else None
    direct = outs[Outcome.DIRECT.value]
    anyp = n - outs[Outcome.UNRECOVERED.value]
    s0 = stage0_stats(fams)
    return {
        "n": n, "tau": tau, "mode": mode,
        # attempts per condition and per milestone (the most seen; a resumed or partial run can have fewer)
        "k": max((len(r) for f in fams for r in f.ladder.values()), default=None),
        "k_stage0": max((len(r) for f in fams for r in f.stage0.values()), default=None) or None,
        "taxonomy": gaps, "taxonomy_fraction": gaps_fraction, "outcomes": outs,
        # families whose label needs a run that is missing (Stage 0, or a C1-C3 rung): in no gap count
        "taxonomy_not_classified": not_classified,
        # outcomes with a not-run rung kept apart (the plots); "outcomes" counts such a rung as unsolved
        "outcomes_known": known_outs, "outcome_undetermined": undetermined,
        "milestone_test_pass": s0["pass_strict"],
        "primitive_run": ran,
        "stage0": s0,
        "summary": {  # Table 1
            "direct_accuracy": c1["per_rollout_rate"] if c1 else None,
            "solved_directly": direct, "solved_directly_share": _share(direct, n) if c1 else None,
            "solved_any": anyp, "solved_any_share": _share(anyp, n),
            "added_by_milestones": anyp - direct, "added_by_milestones_share": _share(anyp - direct, n),
            "solved_with_primitive": prim, "solved_with_primitive_share": None if prim is None else _share(prim, n),
            "math_score": None,
        },
        "conditions": conds,
        "not_run": [c for c, v in conds.items() if v is None],
        "threshold_sweep": {str(t): v for t, v in threshold_sweep(fams, TAUS).items()},
        "contrasts": contrasts(fams, tau),
        "bootstrap": bootstrap_shares(fams, tau, seed, n_resamples),
    }


def _gap_transitions(a: list[FamilyResults], b: list[FamilyResults], tau: int) -> dict | None:
    """Five-way label transitions; None when either student has no Stage 0 verdicts at all."""
    if not any(_stage0_ran(f) for f in a) or not any(_stage0_ran(f) for f in b):
        return None
    la = [(g.value if (g := known_gap(f, tau)) else NOT_CLASSIFIED) for f in a]
    lb = [(g.value if (g := known_gap(f, tau)) else NOT_CLASSIFIED) for f in b]
    ran = primitive_ran(a) or primitive_ran(b)
    labels = [g.value for g in ladder_gaps(ran)] + ([NOT_CLASSIFIED] if NOT_CLASSIFIED in la + lb else [])
    return transition_matrix(la, lb, labels=labels)


def pair(a: list[FamilyResults], b: list[FamilyResults], tau: int = 1, *,
         seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict:
    """Two students on their common families: Table 38 transitions and Table 13 ordering."""
    bmap = {f.pid: f for f in b}
    common = [f for f in a if f.pid in bmap]
    fb = [bmap[f.pid] for f in common]
    oa = [parent_outcome(f.ladder, tau) for f in common]
    ob = [parent_outcome(f.ladder, tau) for f in fb]
    any_a = [x is not Outcome.UNRECOVERED for x in oa]
    any_b = [x is not Outcome.UNRECOVERED for x in ob]
    dir_a = [x is Outcome.DIRECT for x in oa]
    dir_b = [x is Outcome.DIRECT for x in ob]
    return {
        "n_common": len(common),
        "outcome_transitions": transition_matrix(
            oa, ob, labels=[o.value for o in ladder_outcomes(primitive_ran(common) or primitive_ran(fb))]),
        "gap_transitions": _gap_transitions(common, fb, tau),
        "order_any_probe": {
            "a_gt_b": bootstrap_order(any_a, any_b, n_resamples, seed)["frac_a_gt_b"] if common else None,
            "b_gt_a": bootstrap_order(any_b, any_a, n_resamples, seed)["frac_a_gt_b"] if common else None,
            "n_resamples": n_resamples, "seed": seed,
        },
        "order_direct": {
            "a_gt_b": bootstrap_order(dir_a, dir_b, n_resamples, seed)["frac_a_gt_b"] if common else None,
            "b_gt_a": bootstrap_order(dir_b, dir_a, n_resamples, seed)["frac_a_gt_b"] if common else None,
            "n_resamples": n_resamples, "seed": seed,
        },
        "mcnemar_any_probe": mcnemar_exact(any_a, any_b),
    }


# ---------------------------------------------------------------- Markdown

def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _p(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.1e}"


def _markdown(res: dict) -> str:
    meta, studs = res["meta"], res["students"]
    tau = meta["tau"]
    ks = ", ".join(f"{s}: {r['n']} families, K = {r['k'] if r['k'] else NOT_RUN} per condition"
                   + (f", K = {r['k_stage0']} per milestone (Stage 0)" if r["k_stage0"] else "")
                   for s, r in studs.items())
    formats = {s: r["format"] for s, r in studs.items() if r.get("format")}
    grammar = format_audit.constrained(formats)
    L = ["# OracleLadder diagnosis report", "",
         (f"Roadmap set: {meta['roadmap_set']}. " if meta.get("roadmap_set") else "")
         + f"Students: {ks}. Success threshold tau = {tau} correct of K per condition. "
         f"Bootstrap: {meta['n_resamples']} family-level resamples, seed {meta['seed']}."
         + ("" if not meta.get("graders") else
            " Graded by: " + "; ".join(f"{s}: {g}" for s, g in meta["graders"].items()) + ".")
         + ("" if not formats else
            " Token budget: " + "; ".join(f"{s}: {format_audit.budget(a)}" for s, a in formats.items()) + ".")
         + (" " + grammar if grammar else ""), ""]
    cut = format_audit.warnings(formats)
    L += [f"**Warning:** {w}" for w in cut] + ([""] if cut else [])
    notes = []
    for s, r in studs.items():
        # the opt-in primitive rung is named only once it was run (its columns say "not run" anyway)
        not_run = [c for c in r["not_run"] if r["primitive_run"] or c not in PRIMITIVE_CONDITIONS]
        if not_run:
            notes.append(f"- {s}: not run: {', '.join(COND_LABEL[c] for c in not_run)}.")
        if r["outcome_undetermined"]:
            notes.append(f"- {s}: {r['outcome_undetermined']} of {r['n']} families lack a C1-C3 run that their "
                         "parent-probe outcome depends on. The outcome tables count the missing run as unsolved; "
                         "the taxonomy gives these families no label, and the plots hatch them.")
        if not r["stage0"]["stage0_run"]:
            notes.append(f"- {s}: Stage 0 (milestone test) not run; taxonomy columns need it.")
        elif r["taxonomy_not_classified"]:
            notes.append(f"- {s}: {r['taxonomy_not_classified']} of {r['n']} families have no five-way label "
                         "(no Stage 0 verdicts, or a C1-C3 run missing); they are in no gap column.")
        m = r["missing"]
        if m["ungraded_total"] or m["failed_total"]:
            notes.append(f"- {s}: {m['ungraded_total']} rollouts ungraded (grading failed: `ladder regrade` grades "
                         f"them) and {m['failed_total']} jobs failed (the call failed: rerun `ladder probe`); they "
                         "are in no table (see Missing verdicts).")
    bad = meta.get("ungradable_reference") or {}
    if bad:
        notes.append(f"- {len(bad)} families not graded, their reference answer is unusable: "
                     + "; ".join(f"{pid} ({why})" for pid, why in bad.items()) + ".")
    L += notes + ([""] if notes else [])
    if any(r["missing"]["ungraded_total"] or r["missing"]["failed_total"] for r in studs.values()):
        cols = [STAGE0, *TABLE21_ORDER]
        L += ["## Missing verdicts", "",
              "Not a verdict on the student, so left out of every table: rollouts whose grading failed "
              "(ungraded) and jobs whose call failed for good (failed), per condition.", ""]
        rows = [[s, kind] + [r["missing"][kind].get(c, 0) for c in cols] + [r["missing"][f"{kind}_total"]]
                for s, r in studs.items() for kind in ("ungraded", "failed")]
        L += _table(["Model", "Missing"] + [COND_LABEL.get(c, c) for c in cols] + ["Total"], rows)
        L.append("")

    if formats:
        L += format_audit.markdown(formats)
    L += ["## Same-set summary (Table 1)", ""]
    rows = []
    for s, r in studs.items():
        sm = r["summary"]
        rows.append([s, r["n"], _pct(sm["direct_accuracy"]), _pct(sm["solved_directly_share"]),
                     _pct(sm["solved_with_primitive_share"]),
                     _pct(sm["solved_any_share"]), _pct(sm["added_by_milestones_share"]), NOT_RUN])
    L += _table(["Model", "Families", "Direct accuracy", "Solved directly", "Primitive-Needed", "Solved by any probe",
                 "Added by milestones", "MATH score"], rows)
    L += ["", "Direct accuracy is per-rollout C1 success; the other shares are family-level at "
          f">= {tau} of K. Solved by any probe = Direct + Primitive-Needed (where C2-primitive was run) + "
          "Roadmap-Needed + Answers-Needed. "
          "MATH score is an external comparator this toolkit does not run.", ""]

    L += [f"## Families solved per condition (Table 21, >= {tau} of K)", ""]
    rows = []
    for s, r in studs.items():
        cells = []
        for c in TABLE21_ORDER:
            v = r["conditions"][c]
            cells.append(NOT_RUN if v is None else (f"{v['solved']}" if v["families_run"] == r["n"]
                                                    else f"{v['solved']} (of {v['families_run']} run)"))
        any_run = any(r["conditions"][c] is not None for c in LADDER)
        rows.append([s] + cells + [r["summary"]["solved_any"] if any_run else NOT_RUN])
    L += _table(["Model"] + [COND_LABEL[c] for c in TABLE21_ORDER] + ["Any probe"], rows)
    L += ["", "Per-rollout success rate (sr):", ""]
    rows = [[s] + [NOT_RUN if r["conditions"][c] is None else f"{r['conditions'][c]['per_rollout_rate']:.3f}"
                   for c in TABLE21_ORDER] for s, r in studs.items()]
    L += _table(["Model"] + [COND_LABEL[c] for c in TABLE21_ORDER], rows)
    L.append("")

    L += [f"## Reasoning-gap taxonomy (Table 16, strict milestone test, tau = {tau})", ""]
    cols = [g.value for g in Gap]

    def gap_cell(r: dict, key: str, c: str):  # the Primitive-gap column says "not run" where C2-primitive was not
        return r[key].get(c, NOT_RUN)
    unlabeled = any(r["taxonomy_not_classified"] and r["stage0"]["stage0_run"] for r in studs.values())
    rows = []
    for s, r in studs.items():
        s0 = r["stage0"]
        extra = [r["taxonomy_not_classified"]] if unlabeled else []
        if not s0["stage0_run"]:
            rows.append([s] + [r["taxonomy"]["Direct"]] + [NOT_RUN] * (len(cols) - 1 + len(extra)) + [NOT_RUN] * 4)
            continue
        rows.append([s] + [gap_cell(r, "taxonomy", c) for c in cols] + extra
                    + [s0["pass_strict"], s0["pass_fraction"], f"{s0['mean_tested_milestones']:.2f}",
                       f"{_pct(s0['milestone_solve_rate'])} ({s0['milestones_solved']}/{s0['milestones_tested']})"])
    L += _table(["Model"] + cols + ([NOT_CLASSIFIED] if unlabeled else [])
                + ["MS-test pass (strict)", "MS-test pass (fraction)",
                   "Tested milestones / family", "Milestone solve rate"], rows)
    L += ["", "Strict: every tested milestone solved >= 1 of K alone. Fraction: at least half of them. "
          "Milestone solve rate: tested milestones solved >= 1 of K, over all tested milestones.", "",
          "Taxonomy under the fraction milestone test (secondary readout):", ""]
    rows = [[s] + ([gap_cell(r, "taxonomy_fraction", c) for c in cols] if r["stage0"]["stage0_run"] else
                   [r["taxonomy_fraction"]["Direct"]] + [NOT_RUN] * (len(cols) - 1)) for s, r in studs.items()]
    L += _table(["Model"] + cols, rows)
    L.append("")

    L += ["## Threshold sweep (Table 9)", ""]
    for s, r in studs.items():
        L += [f"**{s}** (n = {r['n']})", ""]
        L += _table(["tau"] + [o.value for o in Outcome],
                    [[t + (" (default)" if t == "1" else "")]
                     + [row.get(o.value, NOT_RUN) for o in Outcome]
                     for t, row in r["threshold_sweep"].items()])
        L.append("")

    L += ["## Specificity contrasts, paired exact McNemar (Tables 10-11)", "",
          "Each cell: Delta = families the first condition solves and the second does not, minus the reverse; "
          "two-sided exact p (binomial on discordant pairs); n = families where both were run.", ""]
    names = [c[0] for c in CONTRASTS]
    rows = []
    for s, r in studs.items():
        cells = []
        for c in r["contrasts"]:
            cells.append(NOT_RUN if c["status"] == NOT_RUN else
                         f"{c['delta']:+d} ({c['only_a']}/{c['only_b']}), p = {_p(c['p_value'])}, n = {c['n']}")
        rows.append([s] + cells)
    planned = [i for i, c in enumerate(CONTRASTS) if c[3]]
    extra = [i for i, c in enumerate(CONTRASTS) if not c[3]]
    L += ["Planned contrasts (Table 11):", ""]
    L += _table(["Model"] + [names[i] for i in planned], [[r[0]] + [r[1 + i] for i in planned] for r in rows])
    L += ["", "Each condition against direct prompting (Table 10):", ""]
    L += _table(["Model"] + [names[i] for i in extra], [[r[0]] + [r[1 + i] for i in extra] for r in rows])
    L.append("")

    L += [f"## Family-level bootstrap CIs (Table 12: {meta['n_resamples']} resamples, seed {meta['seed']})", "",
          "Share of families: point estimate [2.5%, 97.5%] percentile interval.", ""]
    keys = [o.value for o in Outcome] + ["Any probe"] + [g.value for g in Gap if g is not Gap.DIRECT]
    rows = []
    for s, r in studs.items():
        b = r["bootstrap"]
        rows.append([s] + [f"{100 * b[k]['point']:.1f}% [{100 * b[k]['lo']:.1f}, {100 * b[k]['hi']:.1f}]"
                           if k in b else (NOT_RUN if b else "—") for k in keys])
    L += _table(["Model"] + keys, rows)
    L.append("")

    if "pair" in res:
        p, (sa, sb) = res["pair"], list(studs)
        tm = p["outcome_transitions"]
        L += [f"## Outcome transitions {sa} -> {sb} (Table 38, {p['n_common']} common families)", ""]
        rows = [[lab] + [tm["counts"][lab][c] for c in tm["labels"]] + [tm["row_totals"][lab]] for lab in tm["labels"]]
        rows.append(["Column total"] + [tm["col_totals"][c] for c in tm["labels"]] + [tm["n"]])
        L += _table([f"{sa} \\ {sb}"] + tm["labels"] + ["Row total"], rows)
        L += ["", f"Same outcome: {tm['same']} of {tm['n']}.", ""]
        gm = p["gap_transitions"]
        if gm is None:
            missing = " and ".join(x for x in (sa, sb) if not studs[x]["stage0"]["stage0_run"]) or "one of them"
            L += [f"Taxonomy transitions {sa} -> {sb}: not run (Stage 0 is missing for {missing} "
                  "on the common families).", ""]
        else:
            L += [f"Taxonomy transitions {sa} -> {sb}:", ""]
            rows = [[lab] + [gm["counts"][lab][c] for c in gm["labels"]] + [gm["row_totals"][lab]]
                    for lab in gm["labels"]]
            rows.append(["Column total"] + [gm["col_totals"][c] for c in gm["labels"]] + [gm["n"]])
            L += _table([f"{sa} \\ {sb}"] + gm["labels"] + ["Row total"], rows)
            L += ["", f"Same label: {gm['same']} of {gm['n']}.", ""]
        oa, od = p["order_any_probe"], p["order_direct"]
        L += [f"## Bootstrap pairwise ordering (Table 13: {oa['n_resamples']} paired family resamples, seed {oa['seed']})",
              "", "Fraction of resamples where the row model's count exceeds the column model's (ties count for neither).", ""]

        def f(x):
            return "—" if x is None else f"{x:.3f}"
        L += _table(["Any-probe count", sa, sb], [[sa, "—", f(oa["a_gt_b"])], [sb, f(oa["b_gt_a"]), "—"]])
        L.append("")
        L += _table(["Direct count", sa, sb], [[sa, "—", f(od["a_gt_b"])], [sb, f(od["b_gt_a"]), "—"]])
        m = p["mcnemar_any_probe"]
        L += ["", f"Paired exact McNemar on any-probe solves: {m['only_a']} only {sa}, {m['only_b']} only {sb}, "
              f"p = {_p(m['p_value'])}.", ""]
    L += ["## Plots", "",
          "- `taxonomy.png`: reasoning-gap taxonomy per student (Figure 4), stacked bottom to top in the order "
          "of the taxonomy table above.",
          "- `fingerprint.png`: parent-probe outcome fingerprint per student (Figure 8), left to right Direct, "
          "Roadmap-Needed, Answers-Needed, Unrecovered.", "",
          "Bars are shares of each student's families; the numbers in the segments are family counts (segments "
          "under 4.5% carry none: read them in the tables). Direct has the same grey in both plots, and a gap of "
          "a family that passes the milestone test has the colour of its outcome (Roadmap-gap and Roadmap-Needed "
          "blue, Milestone-execution-gap and Answers-Needed green, Composition-gap and Unrecovered red); the two "
          "gaps of failing families are dark. A hatched segment holds families a missing run leaves without a "
          "label (Stage 0 or a C1-C3 rung not run); it is never drawn as zero.", ""]
    return "\n".join(L)


# ---------------------------------------------------------------- plots

_HATCH = {"facecolor": "white", "edgecolor": "#8c8c8c", "hatch": "///"}


def _tick_name(name: str, n: int, width: int = 16) -> str:
    """Student name broken after its provider prefix when long, with the family count under it."""
    if len(name) > width and "/" in name:
        head, tail = name.rsplit("/", 1)
        name = f"{head}/\n{tail}"
    return f"{name}\n(n={n})" if n else f"{name}\n(no results)"


def _label_segment(ax, horizontal: bool, pos: float, start: float, size: float, count: int, dark: bool,
                   hatched: bool = False) -> None:
    if count <= 0 or size < 4.5:  # a segment under ~4.5% of the axis is too thin for a readable number
        return
    xy = (start + size / 2, pos) if horizontal else (pos, start + size / 2)
    ax.text(*xy, str(count), ha="center", va="center", fontsize=8, color="white" if dark else "black",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5} if hatched else None)


def taxonomy_figure(res: dict):
    """Figure 4: one stacked bar per student, bottom to top in Table 16 order (Direct once, then the five
    gaps), as % of the student's families with counts in the segments; families whose label needs a run that
    is missing (Stage 0, or a C1-C3 rung) are a hatched segment on top, never a zero.

    Returns (figure, axes, legend, segments drawn as (category or None for the hatched one, counts))."""
    studs = res["students"]
    names = list(studs)
    ns = np.array([studs[s]["n"] for s in names], float)
    denom = np.maximum(ns, 1)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(2.2 + 1.25 * len(names), 4.6))
    bottom = np.zeros(len(names))
    ran = any(studs[s]["primitive_run"] for s in names)  # no Primitive-gap segment nor legend entry otherwise
    segments = [(g.value, f"{g.value}: {GAP_HELP[g]}", {"color": GAP_COLORS[g]}, g is not Gap.DIRECT)
                for g in Gap if ran or g is not Gap.PRIMITIVE]
    segments.append((None, f"{NOT_CLASSIFIED}: Stage 0 or a C1-C3 run missing", _HATCH, False))
    handles, labels, drawn = [], [], []
    for key, label, style, dark in segments:
        counts = np.array([studs[s]["taxonomy"].get(key, 0) if key else studs[s]["taxonomy_not_classified"]
                           for s in names], float)
        if key is None and not counts.any():
            break  # no hatched segment, no legend entry
        share = 100 * counts / denom
        h = ax.bar(x, share, bottom=bottom, width=0.6, linewidth=0.8,
                   **({"edgecolor": "white"} | style))
        for xi, v, c, b0 in zip(x, share, counts, bottom):
            _label_segment(ax, False, xi, b0, v, int(c), dark, key is None)
        bottom += share
        handles.append(h)
        labels.append(label)
        drawn.append((key, [int(c) for c in counts]))
    for xi, n in zip(x, ns):
        if not n:
            ax.text(xi, 50, "no probed\nfamilies", ha="center", va="center", fontsize=8, color="#555555")
    ticks = [_tick_name(s, int(n)) + ("" if studs[s]["stage0"]["stage0_run"] or not n else "\nStage 0 not run")
             for s, n in zip(names, ns)]
    ax.set_xticks(x, ticks, fontsize=8.5,
                  rotation=25 if len(names) > 8 else 0, ha="right" if len(names) > 8 else "center")
    ax.set_xlim(-0.7, len(names) - 0.3)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title("Reasoning-gap taxonomy\n"
                 f"strict milestone test \u00d7 smallest help, tau = {res['meta']['tau']}", fontsize=10)
    # the legend reads top-down like the stack, outside the axes
    legend = ax.legend(handles[::-1], labels[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1),
                       frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def fingerprint_figure(res: dict):
    """Figure 8: one 100% bar per student, left to right Direct, Roadmap-Needed, Answers-Needed,
    Unrecovered; a family whose outcome depends on a C1-C3 run that is missing is hatched, not Unrecovered.

    Returns (figure, axes, legend, segments drawn as (outcome or None for the hatched one, counts))."""
    studs = res["students"]
    names = list(studs)
    ns = np.array([studs[s]["n"] for s in names], float)
    denom = np.maximum(ns, 1)
    y = np.arange(len(names))[::-1]
    fig, ax = plt.subplots(figsize=(8, 1.9 + 0.55 * len(names)), layout="constrained")
    left = np.zeros(len(names))
    ran = any(studs[s]["primitive_run"] for s in names)  # no Primitive-Needed segment nor legend entry otherwise
    segments = [(o.value, f"{o.value}: {OUT_HELP[o]}", {"color": OUT_COLORS[o]}, o is not Outcome.DIRECT)
                for o in Outcome if ran or o is not Outcome.PRIMITIVE_NEEDED]
    segments.append((None, "Not determined: a C1-C3 run it depends on is missing", _HATCH, False))
    handles, labels, drawn = [], [], []
    for key, label, style, dark in segments:
        counts = np.array([studs[s]["outcomes_known"].get(key, 0) if key else studs[s]["outcome_undetermined"]
                           for s in names], float)
        if key is None and not counts.any():
            break
        share = 100 * counts / denom
        h = ax.barh(y, share, left=left, height=0.6, linewidth=0.8, **({"edgecolor": "white"} | style))
        for yi, v, c, l0 in zip(y, share, counts, left):
            _label_segment(ax, True, yi, l0, v, int(c), dark, key is None)
        left += share
        handles.append(h)
        labels.append(label)
        drawn.append((key, [int(c) for c in counts]))
    for yi, n in zip(y, ns):
        if not n:
            ax.text(50, yi, "no probed families", ha="center", va="center", fontsize=8, color="#555555")
    ax.set_yticks(y, [_tick_name(s, int(n)).replace("\n(", " (") for s, n in zip(names, ns)], fontsize=8.5)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of families (numbers in bars: family counts)", fontsize=8.5)
    ax.set_title(f"Parent-probe outcome fingerprint: smallest help that solves the parent (tau = {res['meta']['tau']})",
                 fontsize=10)
    legend = fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=2, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax, legend, drawn


def _save(fig, path: Path) -> None:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def write_report(students: dict[str, list[FamilyResults]], out_dir: str | Path, tau: int = 1,
                 roadmap_set: str | None = None, missing: dict[str, dict] | None = None,
                 graders: dict[str, str] | None = None, ungradable: dict[str, str] | None = None,
                 formats: dict[str, dict] | None = None) -> dict:
    """``missing``: per student, its `missing_counts` (none missing when left out). `graders` names,
    per student, the grader and its version (e.g. "strict (strict-2)"); `ungradable` lists the
    families left out because their reference answer is unusable (pid -> why); `formats`, per
    student, its format audit (`oracleladder.audit.format.format_audit`): a report section, and a
    warning in the header where a condition's answers were cut off at --max-tokens."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"meta": {"tau": tau, "seed": SEED, "n_resamples": N_RESAMPLES, "taus": list(TAUS),
                          "students": list(students), "roadmap_set": roadmap_set, "graders": graders or {},
                          "ungradable_reference": ungradable or {}},
                 "students": {s: {**summarize(f, tau), "missing": (missing or {}).get(s) or missing_counts([], []),
                                  "format": (formats or {}).get(s)}
                              for s, f in students.items()}}
    if len(students) == 2:
        a, b = students.values()
        res["pair"] = pair(a, b, tau)
    (out / "report.json").write_text(json.dumps(res, indent=2))
    (out / "report.md").write_text(_markdown(res))
    if students:
        _save(taxonomy_figure(res)[0], out / "taxonomy.png")
        _save(fingerprint_figure(res)[0], out / "fingerprint.png")
    return res
