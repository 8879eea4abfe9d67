"""Compare two roadmap sets of the same problems for one student (paper Appendix P, Tables 32-34).

The two sets come from two teachers or two granularities. Everything is computed on the pids
present in all four inputs (both roadmap sets and both result sets), in the order of `a`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

from ..schemas.models import Family
from ..schemas.types import MilestoneType
from ..ladder.outcomes import FamilyResults, Gap, classify, milestone_test
from .stats import transition_matrix

C2, C3 = "C2_descriptions", "C3_gold_answers"
NOT_RUN = "not run"


def _all_milestones(f: Family):
    ms = list(f.milestones)
    if f.integrate is not None:  # the private INTEGRATE step, kept outside `milestones`
        ms.append(f.integrate)
    return ms


def structure(fams: list[Family], is_atomic: Callable[[str], bool]) -> dict:
    """Table 32 for one roadmap set. Type shares count all milestones incl. the private INTEGRATE step;
    atomic share and median length are over the gold answers of the tested milestones."""
    n = len(fams)
    allm = [m for f in fams for m in _all_milestones(f)]
    tested = [m for f in fams for _, m in f.tested()]
    types = {t.value: 0 for t in MilestoneType}
    for m in allm:
        types[MilestoneType(m.type).value] += 1
    golds = [m.answer for m in tested]
    return {
        "families": n,
        "milestones_per_family": len(allm) / n if n else None,
        "tested_per_family": len(tested) / n if n else None,
        "families_with_integrate": sum(1 for f in fams if f.integrate is not None
                                       or any(m.type is MilestoneType.INTEGRATE for m in f.milestones)),
        "type_counts": types,
        "type_shares": {t: (c / len(allm) if allm else None) for t, c in types.items()},
        "atomic_share": (sum(1 for g in golds if is_atomic(g)) / len(golds)) if golds else None,
        "median_gold_length": statistics.median(len(g) for g in golds) if golds else None,
        "golds": len(golds),
    }


def _hits(r: FamilyResults, cond: str) -> int | None:
    rolls = r.ladder.get(cond)
    return sum(rolls) if rolls else None


def agreement(ra: list[FamilyResults], rb: list[FamilyResults]) -> dict:
    """Table 33: per-family recovery (>= 1 of K) under C2, C3 and both; disagreements at 1 vs 0 of K."""
    out: dict = {}
    for name, cond in (("C2", C2), ("C3", C3)):
        pairs = [(_hits(x, cond), _hits(y, cond)) for x, y in zip(ra, rb)]
        pairs = [(p, q) for p, q in pairs if p is not None and q is not None]
        if not pairs:
            out[name] = {"status": NOT_RUN, "n": 0}
            continue
        same = sum((p >= 1) == (q >= 1) for p, q in pairs)
        dis = len(pairs) - same
        one_zero = sum(1 for p, q in pairs if (p, q) in ((1, 0), (0, 1)))
        out[name] = {"status": "ok", "n": len(pairs), "recovered_a": sum(p >= 1 for p, _ in pairs),
                     "recovered_b": sum(q >= 1 for _, q in pairs), "same": same,
                     "same_share": same / len(pairs), "disagree": dis, "disagree_1_vs_0": one_zero}
    both = []
    for x, y in zip(ra, rb):
        h = [_hits(x, C2), _hits(y, C2), _hits(x, C3), _hits(y, C3)]
        if None not in h:
            both.append(((h[0] >= 1) == (h[1] >= 1)) and ((h[2] >= 1) == (h[3] >= 1)))
    out["both"] = ({"status": "ok", "n": len(both), "same": sum(both), "same_share": sum(both) / len(both)}
                   if both else {"status": NOT_RUN, "n": 0})
    return out


def five_way(ra: list[FamilyResults], rb: list[FamilyResults]) -> dict:
    """Table 34: five-way labels (tau = 1) under the strict and the fraction milestone test."""
    labels = [g.value for g in Gap]
    res: dict = {}
    for mode in ("strict", "fraction"):
        la = [classify(x, 1, mode) for x in ra]
        lb = [classify(y, 1, mode) for y in rb]
        tm = transition_matrix(la, lb, labels=labels)
        res[mode] = {"transitions": tm, "same": tm["same"], "n": tm["n"],
                     "pass_a": sum(milestone_test(x.stage0, mode) for x in ra),
                     "pass_b": sum(milestone_test(y.stage0, mode) for y in rb)}
    # transition rows present under either test, in Table 16 order of (from, to)
    rows = []
    for fa in labels:
        for fb in labels:
            s = res["strict"]["transitions"]["counts"][fa][fb]
            f = res["fraction"]["transitions"]["counts"][fa][fb]
            if s or f:
                rows.append({"a": fa, "b": fb, "strict": s, "fraction": f})
    res["rows"] = rows
    return res


def _stage0_solve(rs: list[FamilyResults]) -> dict:
    ms = [r for x in rs for r in x.stage0.values() if r]
    return {"tested": len(ms), "solved": sum(1 for r in ms if any(r))}


def _per_attempt(rs: list[FamilyResults], cond: str) -> float | None:
    rolls = [v for x in rs for v in x.ladder.get(cond, [])]
    return sum(rolls) / len(rolls) if rolls else None


def compare(a: list[Family], b: list[Family], results_a: list[FamilyResults], results_b: list[FamilyResults],
            *, is_atomic: Callable[[str], bool], k: int) -> dict:
    fa = {f.pid: f for f in a}
    fb = {f.pid: f for f in b}
    ra = {r.pid: r for r in results_a}
    rb = {r.pid: r for r in results_b}
    pids = [f.pid for f in a if f.pid in fb and f.pid in ra and f.pid in rb]
    ra_l = [ra[p] for p in pids]
    rb_l = [rb[p] for p in pids]
    return {
        "k": k,
        "pids": pids,
        "n": len(pids),
        "dropped": {"a_only": sorted(set(fa) - set(pids)), "b_only": sorted(set(fb) - set(pids))},
        "structure": {"a": structure([fa[p] for p in pids], is_atomic),
                      "b": structure([fb[p] for p in pids], is_atomic)},
        "agreement": agreement(ra_l, rb_l),
        "per_attempt": {side: {"C2": _per_attempt(rl, C2), "C3": _per_attempt(rl, C3)}
                        for side, rl in (("a", ra_l), ("b", rb_l))},
        "stage0": {"a": _stage0_solve(ra_l), "b": _stage0_solve(rb_l)},
        "five_way": five_way(ra_l, rb_l),
    }


def _pct(x: float | None) -> str:
    return NOT_RUN if x is None else f"{100 * x:.1f}%"


def _num(x, fmt="{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _table(header: list[str], rows: list[list]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _markdown(res: dict, name_a: str, name_b: str, student: str | None = None) -> str:
    k, n = res["k"], res["n"]
    sa, sb = res["structure"]["a"], res["structure"]["b"]
    L = [f"# Roadmap comparison: {name_a} vs {name_b}" + (f" (student {student})" if student else ""), "",
         f"{n} families common to both roadmap sets and both result sets; K = {k}.", ""]
    if res["dropped"]["a_only"] or res["dropped"]["b_only"]:
        L += [f"Left out: {len(res['dropped']['a_only'])} families only in {name_a} (or without results), "
              f"{len(res['dropped']['b_only'])} only in {name_b}.", ""]
    L += ["## Roadmap structure (Table 32)", ""]
    rows = [["Milestones per family, all types", _num(sa["milestones_per_family"]), _num(sb["milestones_per_family"])],
            ["Tested milestones per family", _num(sa["tested_per_family"]), _num(sb["tested_per_family"])],
            ["Families with a private INTEGRATE step", sa["families_with_integrate"], sb["families_with_integrate"]]]
    types = sorted(sa["type_shares"], key=lambda t: -((sa["type_shares"][t] or 0) + (sb["type_shares"][t] or 0)))
    for t in types:
        rows.append([f"{t.title()} share", _pct(sa["type_shares"][t]), _pct(sb["type_shares"][t])])
    rows += [["Atomic share of tested gold answers", _pct(sa["atomic_share"]), _pct(sb["atomic_share"])],
             ["Median gold length (characters)", _num(sa["median_gold_length"], "{:g}"),
              _num(sb["median_gold_length"], "{:g}")]]
    L += _table(["", name_a, name_b], rows)
    L += ["", "Type shares count all milestones, including the private INTEGRATE step when the family carries it."]
    bare = [nm for nm, st in ((name_a, sa), (name_b, sb)) if st["families"] and not st["families_with_integrate"]]
    if bare:
        L += [f"{' and '.join(bare)}: no INTEGRATE step (released families keep only the tested milestones), so "
              "the all-types count equals the tested count."]
    L.append("")

    ag = res["agreement"]
    L += [f"## Per-family recovery (Table 33; recovered = at least 1 of {k} correct)", ""]

    def same(x):
        return NOT_RUN if x["status"] == NOT_RUN else f"{x['same']} of {x['n']} ({100 * x['same_share']:.0f}%)"

    def rec(x):
        return NOT_RUN if x["status"] == NOT_RUN else f"{x['recovered_a']} / {x['recovered_b']}"

    def oz(x):
        return NOT_RUN if x["status"] == NOT_RUN else f"{x['disagree_1_vs_0']} of {x['disagree']}"
    pa = res["per_attempt"]
    rows = [["Tested milestones per family", f"{_num(sa['tested_per_family'])} / {_num(sb['tested_per_family'])}"],
            ["Families recovered under C2", rec(ag["C2"])],
            ["Families recovered under C3", rec(ag["C3"])],
            ["Per-attempt success C2", f"{_pct(pa['a']['C2'])} / {_pct(pa['b']['C2'])}"],
            ["Per-attempt success C3", f"{_pct(pa['a']['C3'])} / {_pct(pa['b']['C3'])}"],
            ["Same C2 outcome", same(ag["C2"])],
            ["Same C3 outcome", same(ag["C3"])],
            ["Same C2 and C3 outcomes", same(ag["both"])],
            [f"Disagreements at 1 vs. 0 of {k} (C2, C3)", f"{oz(ag['C2'])}, {oz(ag['C3'])}"]]
    L += _table(["", f"{name_a} / {name_b}"], rows)
    L.append("")

    fw = res["five_way"]
    L += ["## Five-way labels (Table 34)", "",
          "Rows list each transition from the first set's label to the second's. Strict: every tested milestone "
          "solved alone; fraction: at least half of them.", ""]
    rows = [[r["a"], r["b"], r["strict"], r["fraction"]] for r in fw["rows"]]
    rows.append(["Families with the same label", "", fw["strict"]["same"], fw["fraction"]["same"]])
    rows.append([f"Families passing the milestone test ({name_a} / {name_b})", "",
                 f"{fw['strict']['pass_a']} / {fw['strict']['pass_b']}",
                 f"{fw['fraction']['pass_a']} / {fw['fraction']['pass_b']}"])
    L += _table([f"{name_a} label", f"{name_b} label", "Strict test", "Fraction score"], rows)
    s0a, s0b = res["stage0"]["a"], res["stage0"]["b"]
    L += ["", f"Tested milestones solved alone: {s0a['solved']} of {s0a['tested']} ({name_a}), "
          f"{s0b['solved']} of {s0b['tested']} ({name_b}).", "",
          "The labels also use C1, whose prompt does not depend on the roadmap: when both sets were probed with "
          "the same sampling settings, the store's cache gives them the same C1 attempts (the paper samples C1 "
          "afresh for the second set).", ""]
    return "\n".join(L)


def write_compare(result: dict, out_dir: str | Path, name_a: str = "A", name_b: str = "B",
                  student: str | None = None) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps({"names": [name_a, name_b], "student": student, **result}, indent=2))
    (out / "compare.md").write_text(_markdown(result, name_a, name_b, student))
