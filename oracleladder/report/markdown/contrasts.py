"""Tables 10-11 in report.md: the planned contrasts, their q-values, and each condition against C1."""

from __future__ import annotations

from ...schemas.conditions import LADDER
from ..tables import NOT_RUN, Contrast, QFamily, ReportTables
from .cells import p_value, table
from .head import at


def q_family(f: QFamily | None) -> str:
    """The one sentence naming the family the q-values were adjusted over."""
    if f is None:
        return "(no planned contrast was run)"
    return (f"over the {f.tests} planned test{'s' if f.tests != 1 else ''} of {f.students} "
            f"student{'s' if f.students != 1 else ''} together (every planned contrast that was run)")


def _cell(c: Contrast) -> str:
    if c.status == NOT_RUN:
        return NOT_RUN
    assert c.p_value is not None  # a contrast that ran has its test (tables.contrasts)
    return f"{c.delta:+d} ({c.only_a}/{c.only_b}), p = {p_value(c.p_value)}, n = {c.n}"


def contrasts(r: ReportTables) -> list[str]:
    """Tables 11 (the planned contrasts) and 10 (each condition against direct prompting)."""
    cells = {s: [_cell(c) for c in t.contrasts] for s, t in r.students.items()}
    # every student has the same contrasts in the same order (`tables.contrasts`): the first one's name them
    declared = ([(c.contrast, c.planned) for c in next(iter(r.students.values())).contrasts] if r.students
                else [(name, p) for name, _, _, p in LADDER.contrasts])
    planned = [name for name, p in declared if p]
    adjusted = [[s] + [NOT_RUN if c.p_bh is None else p_value(c.p_bh) for c in t.contrasts if c.planned]
                for s, t in r.students.items()]

    def part(planned: bool) -> list[str]:
        pick = [i for i, (_, p) in enumerate(declared) if p == planned]
        return table(["Model"] + [declared[i][0] for i in pick], [[s] + [row[i] for i in pick] for s, row in cells.items()])

    return ["## Specificity contrasts, paired exact McNemar (Tables 10-11)", "", *at(r),
            "Each cell: Delta = families the first condition solves and the second does not, minus the reverse; "
            "two-sided exact p (binomial on discordant pairs); n = families where both were run.", "",
            "Planned contrasts (Table 11):", "", *part(True),
            "", f"Benjamini-Hochberg adjusted p (q) {q_family(r.meta.bh_family)}:", "",
            *table(["Model"] + planned, adjusted),
            "", "Each condition against direct prompting (Table 10):", "", *part(False), ""]
