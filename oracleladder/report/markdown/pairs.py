"""Two result sets in report.md: transitions (Table 38), change against the base (Table 18), pairwise
ordering (Table 13), and one student at two budgets (Tables 22 and 15)."""

from __future__ import annotations

from ..stats import Transitions
from ..tables import NOT_RUN, ReportTables
from .cells import NONE, num, p_value, table
from .head import at


def transitions_table(m: Transitions, sa: str, sb: str) -> list[str]:
    rows = [[lab] + [m.counts[lab][c] for c in m.labels] + [m.row_totals[lab]] for lab in m.labels]
    rows.append(["Column total"] + [m.col_totals[c] for c in m.labels] + [m.n])
    return table([f"{sa} \\ {sb}"] + m.labels + ["Row total"], rows)


def _base_pairs(r: ReportTables) -> list[tuple[str, str]]:
    base = r.meta.base
    return [(base, s) for s in r.students if base is not None and s != base]


def _oriented(r: ReportTables, a: str, b: str) -> tuple[Transitions, Transitions | None, int]:
    """The transitions of a pair read from ``a`` to ``b`` (a pair is stored in column order)."""
    try:
        p = r.pair(a, b)
        return p.outcome_transitions, p.gap_transitions, p.n_common
    except KeyError:
        p = r.pair(b, a)
        return (_flip(p.outcome_transitions), None if p.gap_transitions is None else _flip(p.gap_transitions),
                p.n_common)


def _flip(m: Transitions) -> Transitions:
    counts = {x: {y: m.counts[y][x] for y in m.labels} for x in m.labels}
    return m.model_copy(update={"counts": counts, "row_totals": m.col_totals, "col_totals": m.row_totals})


def transitions(r: ReportTables) -> list[str]:
    """Table 38: the base's outcomes and five-way labels against each other student's, on common families."""
    L: list[str] = []
    for sa, sb in _base_pairs(r):
        om, gm, n = _oriented(r, sa, sb)
        L += [f"## Outcome transitions {sa} -> {sb} (Table 38, {n} common families)", "", *at(r, (sa, sb)),
              *transitions_table(om, sa, sb), "", f"Same outcome: {om.same} of {om.n}.", ""]
        if gm is None:
            missing = " and ".join(x for x in (sa, sb) if not r.students[x].stage0.stage0_run) or "one of them"
            L += [f"Taxonomy transitions {sa} -> {sb}: not run (Stage 0 is missing for {missing} "
                  "on the common families).", ""]
        else:
            L += [f"Taxonomy transitions {sa} -> {sb}:", "", *transitions_table(gm, sa, sb),
                  "", f"Same label: {gm.same} of {gm.n}.", ""]
    return L


def change(r: ReportTables) -> list[str]:
    """Table 18: each student's outcome counts against the base's, on their common families."""
    base = r.meta.base
    if not r.changes or base is None:
        return []
    keys = list(next(iter(r.changes.values())).base)
    first = next(iter(r.changes.values()))
    rows = [[f"{base} (base)", first.n_common] + [first.base[k] for k in keys]]
    rows += [[s, c.n_common] + [f"{c.counts[k]} ({c.delta[k]:+d})" for k in keys] for s, c in r.changes.items()]
    return [f"## Change against {base} (Table 18, tau = {r.meta.tau})", "", *at(r),
            "Families per outcome on the families each student shares with the base, and the change from the base "
            "(in brackets); the base row is on its common families with the first student.", "",
            *table(["Model", "Common families"] + keys, rows), ""]


def ordering(r: ReportTables) -> list[str]:
    """Table 13 for every pair, and the paired McNemar on each pair's any-probe solves."""
    names = list(r.students)
    oa = r.pairs[0].order_any_probe

    def f(x: float | None) -> str:
        return num(x, "{:.3f}")

    def cell(a: str, b: str, key: str) -> str:
        if a == b:
            return NONE
        try:
            return f(getattr(r.pair(a, b), key).a_gt_b)
        except KeyError:
            return f(getattr(r.pair(b, a), key).b_gt_a)

    def matrix(title: str, key: str) -> list[str]:
        return table([title] + names, [[a] + [cell(a, b, key) for b in names] for a in names])
    tests = [f"- {p.a} vs {p.b}: {p.mcnemar_any_probe.only_a} only {p.a}, {p.mcnemar_any_probe.only_b} only {p.b}, "
             f"p = {p_value(p.mcnemar_any_probe.p_value)} ({p.n_common} common families)." for p in r.pairs]
    return [f"## Bootstrap pairwise ordering (Table 13: {oa.n_resamples} paired family resamples, seed {oa.seed})",
            "", *at(r), "Fraction of resamples where the row model's count exceeds the column model's, on the "
            "families both have (ties count for neither).", "",
            *matrix("Any-probe count", "order_any_probe"), "", *matrix("Direct count", "order_direct"), "",
            "Paired exact McNemar on any-probe solves:", "", *tests, ""]


def budgets(r: ReportTables) -> list[str]:
    """Tables 22 and 15: each student probed at two --max-tokens; one line where none was."""
    if not r.budgets:
        return ["Tables 15 and 22 (Stage 0 and outcomes at two budgets) need a student read at two --max-tokens "
                "side by side (`--by-run`).", ""]
    keys = list(next(iter(r.budgets.values())).outcomes_low)
    rows22, rows15 = [], []
    for s, b in r.budgets.items():
        rows22.append([s, b.n_common] + [b.outcomes_low[k] for k in keys] + [b.outcomes_high[k] for k in keys])
        rows15.append([s] + ([NOT_RUN] * 5 if b.pass_low is None else
                             [b.pass_low, b.pass_high, b.pass_flipped, b.composition_low, b.composition_high]))
    spell = "; ".join(f"{s}: {b.max_tokens[0]} against {b.max_tokens[1]}" for s, b in r.budgets.items())
    low, high = "lower", "higher"  # each student's two budgets are named in the line above the table
    moves = []
    for s, b in r.budgets.items():
        m = b.transitions
        moves += [f"Outcome transitions of {s} from max_tokens {b.max_tokens[0]} (rows) to {b.max_tokens[1]} "
                  "(columns):", "", *at(r, (b.low, b.high)),
                  *transitions_table(m, str(b.max_tokens[0]), str(b.max_tokens[1])), "",
                  f"Same outcome: {m.same} of {m.n}.", ""]
    return [f"## Outcomes at two budgets (Table 22, tau = {r.meta.tau})", "", *at(r), f"max_tokens: {spell}.", "",
            *table(["Model", "Common families"] + [f"{k} ({low})" for k in keys] + [f"{k} ({high})" for k in keys],
                   rows22), "", *moves,
            "## Stage 0 at two budgets (Table 15)", "", *at(r),
            *table(["Model", f"Pass ({low})", f"Pass ({high})", "Pass flipped", f"Comp. gap ({low})",
                    f"Comp. gap ({high})"], rows15), "",
            "Pass: families passing the strict milestone test; flipped: those passing at one budget only; "
            "Comp. gap: families passing it that no parent probe recovers. On the families both budgets have.", ""]
