"""Diagnosis report for one or more students: Markdown, JSON and PNG plots.

Tables follow the paper: same-set summary (Table 1), per-condition solved counts (Table 21),
reasoning-gap taxonomy with milestone-test statistics (Table 16 / Table 14), threshold sweep
(Table 9), specificity contrasts with paired exact McNemar (Tables 10-11), family-level bootstrap
CIs (Table 12) and, for exactly two students, the outcome transition matrix (Table 38) and the
bootstrap pairwise ordering (Table 13). Plots: taxonomy stacked bars (Figure 4) and the outcome
fingerprint (Figure 8). Conditions that were not run are reported as "not run", never as zeros.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..schemas.models import CONDITIONS  # noqa: E402
from .outcomes import FamilyResults, Gap, Outcome, classify, milestone_test, parent_outcome, solved  # noqa: E402
from .stats import bootstrap_ci, bootstrap_order, mcnemar_exact, threshold_sweep, transition_matrix  # noqa: E402

SEED = 42
N_RESAMPLES = 1000
TAUS = (1, 2, 3, 4, 5)
NOT_RUN = "not run"

COND_LABEL = {
    "C1_direct": "C1 direct",
    "C2_random": "C2-random",
    "C2_generic": "C2-generic",
    "C2_descriptions": "C2-correct",
    "C3_mismatched": "C3-mismatched",
    "C3_gold_answers": "C3-gold",
}
TABLE21_ORDER = ("C1_direct", "C2_random", "C2_generic", "C2_descriptions", "C3_mismatched", "C3_gold_answers")
# (name, correct condition, control condition, planned Table 11 contrast?)
CONTRASTS = (
    ("C2-correct vs C1", "C2_descriptions", "C1_direct", True),
    ("C2-correct vs C2-random", "C2_descriptions", "C2_random", True),
    ("C2-correct vs C2-generic", "C2_descriptions", "C2_generic", True),
    ("C3-gold vs C3-mismatched", "C3_gold_answers", "C3_mismatched", True),
    ("C2-random vs C1", "C2_random", "C1_direct", False),
    ("C2-generic vs C1", "C2_generic", "C1_direct", False),
    ("C3-mismatched vs C1", "C3_mismatched", "C1_direct", False),
    ("C3-gold vs C1", "C3_gold_answers", "C1_direct", False),
)
GAP_COLORS = {Gap.DIRECT: "#8c8c8c", Gap.ROADMAP: "#1f77b4", Gap.MS_EXEC: "#2ca02c",
              Gap.COMPOSITION: "#ff7f0e", Gap.MISSING_MS: "#9467bd", Gap.CAPABILITY: "#d62728"}
OUT_COLORS = {Outcome.DIRECT: "#8c8c8c", Outcome.ROADMAP_NEEDED: "#1f77b4",
              Outcome.ANSWERS_NEEDED: "#2ca02c", Outcome.UNRECOVERED: "#d62728"}


def _ran(f: FamilyResults, cond: str) -> bool:
    return bool(f.ladder.get(cond))


def _pct(x: float | None) -> str:
    return NOT_RUN if x is None else f"{100 * x:.1f}%"


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def condition_counts(fams: list[FamilyResults], tau: int = 1) -> dict[str, dict | None]:
    """Table 21 / Table 10: per condition, families run, families solved (>= tau of K), per-rollout rate.

    A condition no family has rollouts for is None ("not run")."""
    out: dict[str, dict | None] = {}
    for c in CONDITIONS:
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
    gaps = [classify(f, tau, "strict") for f in fams]
    res: dict[str, dict] = {}
    if not fams:
        return res
    ind = {o.value: [x is o for x in outs] for o in Outcome}
    ind["Any probe"] = [x is not Outcome.UNRECOVERED for x in outs]
    ind.update({g.value: [x is g for x in gaps] for g in Gap if g is not Gap.DIRECT})
    for k, v in ind.items():
        res[k] = bootstrap_ci(v, stat=np.mean, n_resamples=n_resamples, seed=seed)
    return res


def summarize(fams: list[FamilyResults], tau: int = 1, mode: str = "strict", *,
              seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict:
    n = len(fams)
    gaps = {g.value: 0 for g in Gap}
    gaps_fraction = {g.value: 0 for g in Gap}
    outs = {o.value: 0 for o in Outcome}
    for f in fams:
        gaps[classify(f, tau, mode).value] += 1
        gaps_fraction[classify(f, tau, "fraction").value] += 1
        outs[parent_outcome(f.ladder, tau).value] += 1
    conds = condition_counts(fams, tau)
    c1 = conds["C1_direct"]
    direct = outs[Outcome.DIRECT.value]
    anyp = n - outs[Outcome.UNRECOVERED.value]
    s0 = stage0_stats(fams)
    return {
        "n": n, "tau": tau, "mode": mode,
        "taxonomy": gaps, "taxonomy_fraction": gaps_fraction, "outcomes": outs,
        "milestone_test_pass": s0["pass_strict"],
        "stage0": s0,
        "summary": {  # Table 1
            "direct_accuracy": c1["per_rollout_rate"] if c1 else None,
            "solved_directly": direct, "solved_directly_share": _share(direct, n) if c1 else None,
            "solved_any": anyp, "solved_any_share": _share(anyp, n),
            "added_by_milestones": anyp - direct, "added_by_milestones_share": _share(anyp - direct, n),
            "math_score": None,
        },
        "conditions": conds,
        "not_run": [c for c, v in conds.items() if v is None],
        "threshold_sweep": {str(t): v for t, v in threshold_sweep(fams, TAUS).items()},
        "contrasts": contrasts(fams, tau),
        "bootstrap": bootstrap_shares(fams, tau, seed, n_resamples),
    }


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
        "outcome_transitions": transition_matrix(oa, ob, labels=[o.value for o in Outcome]),
        "gap_transitions": transition_matrix([classify(f, tau) for f in common], [classify(f, tau) for f in fb],
                                             labels=[g.value for g in Gap]),
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
    L = ["# OracleLadder diagnosis report", "",
         f"Students: {', '.join(studs)}. Success threshold tau = {tau} correct of K per condition. "
         f"Bootstrap: {meta['n_resamples']} family-level resamples, seed {meta['seed']}.", ""]
    for s, r in studs.items():
        if r["not_run"]:
            L.append(f"- {s}: not run: {', '.join(COND_LABEL[c] for c in r['not_run'])}.")
            ladder = [COND_LABEL[c] for c in ("C1_direct", "C2_descriptions", "C3_gold_answers") if c in r["not_run"]]
            if ladder:
                L.append(f"  Parent-probe outcomes and the taxonomy count {', '.join(ladder)} as unsolved.")
        if not r["stage0"]["stage0_run"]:
            L.append(f"- {s}: Stage 0 (milestone test) not run; taxonomy columns need it.")
    L.append("")

    L += ["## Same-set summary (Table 1)", ""]
    rows = []
    for s, r in studs.items():
        sm = r["summary"]
        rows.append([s, r["n"], _pct(sm["direct_accuracy"]), _pct(sm["solved_directly_share"]),
                     _pct(sm["solved_any_share"]), _pct(sm["added_by_milestones_share"]), NOT_RUN])
    L += _table(["Model", "Families", "Direct accuracy", "Solved directly", "Solved by any probe",
                 "Added by milestones", "MATH score"], rows)
    L += ["", "Direct accuracy is per-rollout C1 success; the other shares are family-level at "
          f">= {tau} of K. Solved by any probe = Direct + Roadmap-Needed + Answers-Needed. "
          "MATH score is an external comparator this toolkit does not run.", ""]

    L += [f"## Families solved per condition (Table 21, >= {tau} of K)", ""]
    rows = []
    for s, r in studs.items():
        cells = []
        for c in TABLE21_ORDER:
            v = r["conditions"][c]
            cells.append(NOT_RUN if v is None else (f"{v['solved']}" if v["families_run"] == r["n"]
                                                    else f"{v['solved']} (of {v['families_run']} run)"))
        rows.append([s] + cells + [r["summary"]["solved_any"]])
    L += _table(["Model"] + [COND_LABEL[c] for c in TABLE21_ORDER] + ["Any probe"], rows)
    L += ["", "Per-rollout success rate (sr):", ""]
    rows = [[s] + [NOT_RUN if r["conditions"][c] is None else f"{r['conditions'][c]['per_rollout_rate']:.3f}"
                   for c in TABLE21_ORDER] for s, r in studs.items()]
    L += _table(["Model"] + [COND_LABEL[c] for c in TABLE21_ORDER], rows)
    L.append("")

    L += [f"## Reasoning-gap taxonomy (Table 16, strict milestone test, tau = {tau})", ""]
    cols = [g.value for g in Gap]
    rows = []
    for s, r in studs.items():
        s0 = r["stage0"]
        if not s0["stage0_run"]:
            rows.append([s] + [r["taxonomy"]["Direct"]] + [NOT_RUN] * (len(cols) - 1) + [NOT_RUN] * 4)
            continue
        rows.append([s] + [r["taxonomy"][c] for c in cols]
                    + [s0["pass_strict"], s0["pass_fraction"], f"{s0['mean_tested_milestones']:.2f}",
                       f"{_pct(s0['milestone_solve_rate'])} ({s0['milestones_solved']}/{s0['milestones_tested']})"])
    L += _table(["Model"] + cols + ["MS-test pass (strict)", "MS-test pass (fraction)",
                                    "Tested milestones / family", "Milestone solve rate"], rows)
    L += ["", "Strict: every tested milestone solved >= 1 of K alone. Fraction: at least half of them. "
          "Milestone solve rate: tested milestones solved >= 1 of K, over all tested milestones.", "",
          "Taxonomy under the fraction milestone test (secondary readout):", ""]
    rows = [[s] + [r["taxonomy_fraction"][c] for c in cols] for s, r in studs.items() if r["stage0"]["stage0_run"]]
    L += _table(["Model"] + cols, rows)
    L.append("")

    L += ["## Threshold sweep (Table 9)", ""]
    for s, r in studs.items():
        L += [f"**{s}** (n = {r['n']})", ""]
        L += _table(["tau"] + [o.value for o in Outcome],
                    [[t + (" (default)" if t == "1" else "")] + [row[o.value] for o in Outcome]
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
                           if k in b else "—" for k in keys])
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
        L += [f"Taxonomy transitions {sa} -> {sb}:", ""]
        rows = [[lab] + [gm["counts"][lab][c] for c in gm["labels"]] + [gm["row_totals"][lab]] for lab in gm["labels"]]
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
    L += ["## Plots", "", "- `taxonomy.png`: reasoning-gap taxonomy per student (Figure 4).",
          "- `fingerprint.png`: parent-probe outcome fingerprint per student (Figure 8).", ""]
    return "\n".join(L)


# ---------------------------------------------------------------- plots

def _plot_taxonomy(res: dict, path: Path) -> None:
    studs = res["students"]
    names = list(studs)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.6 * len(names) + 4), 4.5))
    bottom = np.zeros(len(names))
    x = np.arange(len(names))
    handles = []
    ymax = max([studs[s]["n"] for s in names] + [1])
    for g in Gap:
        vals = np.array([studs[s]["taxonomy"][g.value] if studs[s]["stage0"]["stage0_run"] or g is Gap.DIRECT
                         else 0 for s in names], float)
        h = ax.bar(x, vals, bottom=bottom, color=GAP_COLORS[g], label=g.value, width=0.6, edgecolor="white")
        for xi, v, b0 in zip(x, vals, bottom):
            if v > 0 and v >= 0.045 * ymax:  # too thin a segment for a readable number
                ax.text(xi, b0 + v / 2, f"{int(v)}", ha="center", va="center", fontsize=8,
                        color="white" if g in (Gap.ROADMAP, Gap.CAPABILITY, Gap.MISSING_MS, Gap.MS_EXEC) else "black")
        bottom += vals
        handles.append(h)
    long = max(map(len, names)) > 10 and len(names) > 2
    ax.set_xticks(x, [f"{s}\n(n={studs[s]['n']})" + ("" if studs[s]["stage0"]["stage0_run"] else "\nStage 0 not run")
                      for s in names], rotation=20 if long else 0,
                  ha="right" if long else "center")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("families")
    ax.set_ylim(0, max(1, max(bottom)) * 1.05)
    ax.set_title(f"Reasoning-gap taxonomy (strict milestone test, tau = {res['meta']['tau']})", fontsize=10)
    # legend reversed so it reads top-down like the stack
    ax.legend(handles[::-1], [g.value for g in Gap][::-1], fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _plot_fingerprint(res: dict, path: Path) -> None:
    studs = res["students"]
    names = list(studs)
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.6 * len(names)))
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    for o in Outcome:
        cnt = np.array([studs[s]["outcomes"][o.value] for s in names], float)
        n = np.array([max(1, studs[s]["n"]) for s in names], float)
        share = 100 * cnt / n
        ax.barh(y, share, left=left, color=OUT_COLORS[o], label=o.value, height=0.6, edgecolor="white")
        for yi, v, c, l0 in zip(y, share, cnt, left):
            if v >= 6:
                ax.text(l0 + v / 2, yi, f"{int(c)}", ha="center", va="center", fontsize=8,
                        color="black" if o is Outcome.DIRECT else "white")
        left += share
    ax.set_yticks(y, [f"{s} (n={studs[s]['n']})" for s in names])
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of families (numbers in bars: family counts)")
    ax.set_title(f"Parent-probe outcome fingerprint (tau = {res['meta']['tau']})", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def write_report(students: dict[str, list[FamilyResults]], out_dir: str | Path, tau: int = 1) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"meta": {"tau": tau, "seed": SEED, "n_resamples": N_RESAMPLES, "taus": list(TAUS),
                          "students": list(students)},
                 "students": {s: summarize(f, tau) for s, f in students.items()}}
    if len(students) == 2:
        a, b = students.values()
        res["pair"] = pair(a, b, tau)
    (out / "report.json").write_text(json.dumps(res, indent=2))
    (out / "report.md").write_text(_markdown(res))
    if students:
        _plot_taxonomy(res, out / "taxonomy.png")
        _plot_fingerprint(res, out / "fingerprint.png")
    return res
