"""The replication view (paper Table 2, the explainer's Figure 6): several roadmap sets side by side, each
read for its own student at its own threshold tau, the families solved under the unaided prompt, the
controls and the matched help. A set's column counts a family solved under a condition when at least
tau of its K attempts are correct (`tables.condition_counts`, as every report counts it); a condition
not run on a set is "not run", never 0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults
from ..schemas.conditions import LADDER
from .markdown import pct, table
from .tables import NOT_RUN, ConditionCount, Frozen, Missing, condition_counts

if TYPE_CHECKING:
    from . import plots as _plots
else:  # matplotlib: loaded when the figure is drawn
    _plots = lazy_module("oracleladder.report.plots")

FILES = ("replication.md", "replication.json", "replication.png")


def specificity() -> tuple[str, ...]:
    """Table 2's rows and Figures 3a and 6's bars: the unaided prompt, the controls and the matched help, as the
    paper sets them side by side: the conditions run by default (`schemas.LADDER`), in column order."""
    return tuple(c for c in LADDER.columns if not LADDER[c].optional)


class ReplicationColumn(Frozen):
    """One roadmap set of the view: its student, tau, the setting read, its families and per condition
    the families solved (None: not run)."""

    source: str
    student: str
    tau: int
    setting: str
    n: int
    conditions: dict[str, ConditionCount | None]
    missing: Missing  # verdicts in no count: ungraded rollouts, failed jobs


def column(source: str, student: str, tau: int, setting: str, results: list[FamilyResults],
           missing: Missing | dict) -> ReplicationColumn:
    counts = condition_counts(results, tau)
    return ReplicationColumn(source=source, student=student, tau=tau, setting=setting, n=len(results),
                             conditions={c: counts[c] for c in specificity()}, missing=Missing.model_validate(missing))


def _read(col: ReplicationColumn) -> str:
    m = col.missing
    lost = (f"; {m.ungraded_total} ungraded rollouts and {m.failed_total} failed jobs are in no count"
            if m.ungraded_total or m.failed_total else "")
    return f"- {col.source}: {col.student}, tau = {col.tau}, {col.setting}{lost}"


def _cell(c: ConditionCount | None, n: int) -> str:
    return NOT_RUN if c is None else f"{c.solved} ({pct(c.solved, n)})"


def markdown(columns: Sequence[ReplicationColumn]) -> list[str]:
    """Table 2: a row per condition, a column per roadmap set; under it what each column read."""
    rows = [[LADDER[c].short, *(_cell(col.conditions[c], col.n) for col in columns)] for c in specificity()]
    return ["## The roadmap effect across roadmap sets (Table 2)", "",
            "Families solved under each condition (at least tau correct of K), each set at its own tau.", "",
            *table(["Condition", *(f"{col.source} (n={col.n})" for col in columns)], rows), "",
            *(_read(col) for col in columns), ""]


def write_replication(columns: Sequence[ReplicationColumn], out: Path) -> list[Path]:
    """replication.md, replication.json and replication.png (Figure 6) in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md, js, png = (out / name for name in FILES)
    md.write_text("\n".join(markdown(columns)))
    js.write_text(json.dumps([c.model_dump() for c in columns], indent=2))
    _plots.replication_figure(columns)[0].savefig(png, dpi=110, bbox_inches="tight")
    return [md, js, png]
