"""The tables the command line prints to the terminal, from the same typed data as the files: the
construction funnel (`ladder funnel`: `construction.funnel.Funnel`), the re-anchoring tables
(`ladder reanchor`: `construction.reanchor.ReanchorTable`) and what a report leaves out of its
tables (`ladder report`: `tables.Missing`). Each returns a rich Table or the lines to print."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.table import Table

from ..construction.funnel import SCREEN_CAUSES
from .tables import Missing

if TYPE_CHECKING:  # SciPy is behind the re-anchoring module: only its table's type is read here
    from ..construction.funnel import Funnel
    from ..construction.reanchor import KeptAcross, ReanchorTable


def funnel_table(f: Funnel) -> Table:
    """The funnel, one row per step: families left, how many it dropped and why."""
    table = Table("step", "families", "dropped", "why",
                  title=(f"funnel of set '{f.set_name}' (roadmaps: {f.source})" if f.set_name
                         else f"funnel of roadmaps {f.source}, not screened"))
    compile_why = ", ".join(f"{c} {n}" for c, n in sorted(f.compile_failures.items(), key=lambda x: -x[1]))
    screen_why = ", ".join(f"{c} {f.screen_failures[c]}" for c in SCREEN_CAUSES if f.screen_failures.get(c))
    raw_why = ", ".join(f"{c} {f.raw_screen_failures[c]}" for c in SCREEN_CAUSES if f.raw_screen_failures.get(c))
    raw = [] if f.passed_raw_screen is None else [("passed the raw screen (before compile)", f.passed_raw_screen,
                                                   raw_why)]
    # a raw pool's set is screened before compile: no screen of its compiled families
    screened = [] if raw else [("passed the screen", f.passed_screen, screen_why)]
    steps = [("candidates", f.candidates, ""), ("valid reference answer", f.valid_reference, "unusable reference answer"),
             *raw, ("compiled", f.compiled, compile_why), *screened,
             ("structural filter (final set)", f.final, "fewer than 2 tested milestones after the leak rule")]
    before = f.candidates
    for step, n, why in steps:
        table.add_row(step, str(n), str(before - n) if step != "candidates" else "", why if before > n else "")
        before = n
    return table


def signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def anchor_counts_table(t: ReanchorTable) -> Table:
    """Table 3: each model's composition-gap families in each anchor's subset."""
    models = list(dict.fromkeys(m for row in t.counts.values() for m in row))
    table = Table("Anchor (subset)", *models, title="composition-gap families in each anchor's subset")
    for a in t.anchors:
        table.add_row(f"{a} (n={t.subsets[a]})", *(str(t.counts[a].get(m, "-")) for m in models))
    return table


def tau_table(t: ReanchorTable) -> Table:
    """Tables 4-6: Kendall's tau between every two anchors' rankings."""
    table = Table("Anchor", *t.anchors, title="Kendall's tau between anchor screens' rankings")
    for a in t.anchors:
        size = f" (n={t.subsets[a]})" if a in t.subsets else ""
        table.add_row(a + size, *(signed(t.tau[a][b]) if a != b else "1.00" for b in t.anchors))
    return table


def kept_across_table(t: KeptAcross) -> Table:
    """Table 29: each anchor's screen, the families it keeps, and how many of each other set's it keeps too."""
    table = Table("Anchor (set)", "Kept", *(f"of {s}'s" for s in t.sets), title="families kept under each anchor")
    for a in t.sets:
        share = f"{t.kept[a]}/{t.screened[a]} ({t.kept[a] / t.screened[a]:.1%})" if t.screened[a] else "0/0"
        table.add_row(f"{t.anchors[a]} ({a})", share, *(f"{t.both[a][b]}/{t.kept[b]}" for b in t.sets))
    return table


def tau_summary(t: ReanchorTable) -> str:
    return f"mean {signed(t.mean)}; {t.positive} of {t.pairs} pairs positive"


def missing_notices(missing: Mapping[str, Missing | dict]) -> list[str]:
    """One line per student whose report leaves verdicts out of every table (`ladder report` says them)."""
    out = []
    for name, m in missing.items():
        m = Missing.model_validate(m)
        if m.ungraded_total or m.failed_total:
            out.append(f"{name}: {m.ungraded_total} ungraded rollouts and {m.failed_total} failed jobs "
                       "are in no table (report.md, Missing verdicts)")
    return out
