"""Markdown: the helpers every table of the toolkit is written with (`table`, `pct`, `num`), and report.md,
one function per table, from the typed tables (`tables.ReportTables`).

The format audit's table is here too: report.md carries it, and `ladder audit format` prints the same.

One module per table family: `cells`, `format_audit`, `head`, `student`, `contrasts`, `sets`, `containment`, `pairs`, `checks`, `replication`, `whole`."""

from __future__ import annotations

from .cells import NONE, num, p_value, pct, table
from .checks import leak_residual, review, review_at_budgets, review_table
from .containment import by_length, containment, share, solved_alone
from .contrasts import contrasts, q_family
from .format_audit import budget, constrained, format_audit
from .head import at, header, missing_verdicts, notes
from .pairs import budgets, change, ordering, transitions
from .replication import replication
from .sets import leak_rule, milestone_types
from .student import bootstrap, conditions, recovery_by_tau, stage0_fingerprint, summary, taxonomy, threshold_sweep
from .whole import PLOTS, report_md

__all__ = ["at", "bootstrap", "budget", "budgets", "by_length", "change", "conditions", "constrained", "containment",
           "contrasts", "format_audit", "header", "leak_residual", "leak_rule",
           "milestone_types", "missing_verdicts", "NONE", "notes", "num", "ordering", "p_value", "pct",
           "PLOTS", "q_family", "recovery_by_tau", "replication", "report_md", "review", "review_at_budgets", "review_table",
           "share", "solved_alone", "stage0_fingerprint", "summary", "table", "taxonomy", "threshold_sweep",
           "transitions"]
