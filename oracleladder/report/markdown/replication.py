"""The replication view in Markdown (paper Table 2): a row per condition, a column per roadmap set, and under
it what each column read."""

from __future__ import annotations

from collections.abc import Sequence

from ...schemas.conditions import LADDER
from ..tables import NOT_RUN, ConditionCount, ReplicationColumn, specificity
from .cells import pct, table


def _read(col: ReplicationColumn) -> str:
    m = col.missing
    lost = (f"; {m.ungraded_total} ungraded rollouts and {m.failed_total} failed jobs are in no count"
            if m.ungraded_total or m.failed_total else "")
    return f"- {col.source}: {col.student}, tau = {col.tau}, {col.setting}{lost}"


def _cell(c: ConditionCount | None, n: int) -> str:
    return NOT_RUN if c is None else f"{c.solved} ({pct(c.solved, n)})"


def replication(columns: Sequence[ReplicationColumn]) -> list[str]:
    """Table 2: a row per condition, a column per roadmap set; under it what each column read."""
    rows = [[LADDER[c].short, *(_cell(col.conditions[c], col.n) for col in columns)] for c in specificity()]
    return ["## The roadmap effect across roadmap sets (Table 2)", "",
            "Families solved under each condition (at least tau correct of K), each set at its own tau.", "",
            *table(["Condition", *(f"{col.source} (n={col.n})" for col in columns)], rows), "",
            *(_read(col) for col in columns), ""]
