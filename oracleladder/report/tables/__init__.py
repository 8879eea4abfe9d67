"""The report's tables, computed from each student's results; typed, and apart from their rendering
(`markdown` writes report.md from them, `plots` the figures, and their JSON form is report.json).

Tables follow the paper: same-set summary (Table 1), per-condition solved counts (Table 21),
reasoning-gap taxonomy with milestone-test statistics (Table 16 / Table 14), threshold sweep
(Table 9), specificity contrasts with paired exact McNemar (Tables 10-11), family-level bootstrap
CIs with the any-probe rank interval (Table 12), and for two or more students the bootstrap pairwise
ordering of every pair (Table 13), the outcome and five-way label transitions (Table 38) and the change
in counts (Table 18) of each student against a base. Also: the fingerprint of the families that pass the
milestone test (Table 14), per-condition recovery over tau (Table 28), Benjamini-Hochberg over the planned
contrasts of all the students as one family, the set's milestone types and answer schemas and each student's
types by outcome state (Tables 7, 48 and 8, given the set's families), a student at two budgets (Tables 22
and 15, with the transitions of each family's outcome from one budget to the other), and the milestone
answers in each student's unaided attempts by whether it solves the milestone alone and by gold length
(Tables 36 and 37: `audit.roadmap` computes them from the attempts' text, and the report is given them).
Per student and family, its labels and counts (`family_rows`: report.json's "families", `Report.to_pandas`).
Conditions that were not run are "not run" (None in report.json), never zeros.
The primitive rung (docs/primitive.md: Primitive-Needed, Primitive-gap, C2-primitive and its control)
has its counts where C2-primitive was run and none elsewhere.

One module per table family: `base`, `containment`, `contrasts`, `student`, `pairs`, `sets`, `checks`, `replication`, `truncation`, `whole`."""

from __future__ import annotations

from .base import (
           ANY_PROBE,
           BUCKETS,
           N_RESAMPLES,
           NOT_RUN,
           SEED,
           STAGE0,
           TAUS,
           Frozen,
           gap_label,
           known_gap,
           primitive_ran,
)
from .checks import LeakResidual, ReviewRow, leak_residual, review_row
from .containment import Against, Containment, Rates, Share, SolvedAlone, Versus
from .contrasts import Contrast, QFamily, adjust_planned, contrasts, q_family
from .pairs import CHANGE_KEYS, BudgetChange, Change, Ordering, Pair, RankRow, budget_change, change, pair, ranks
from .replication import ReplicationColumn, replication_column, specificity
from .sets import (
           TYPES,
           LeakDrop,
           LeakRule,
           MilestoneTypes,
           TypesByOutcome,
           leak_rule,
           milestone_types,
           types_by_outcome,
)
from .student import (
           ConditionCount,
           Count,
           FamilyRow,
           FormatAudit,
           FormatRow,
           Missing,
           Stage0,
           StudentReport,
           StudentTables,
           Summary,
           bootstrap_shares,
           condition_counts,
           cut_off_warnings,
           family_rows,
           fingerprint_passing,
           missing_verdicts,
           recovery_by_tau,
           stage0_stats,
           student_tables,
)
from .truncation import WARN_SHARE, WHY, Truncation, truncation, why_unreadable
from .whole import Meta, ReportInput, ReportTables, report_tables

__all__ = ["adjust_planned", "Against", "ANY_PROBE", "bootstrap_shares", "BUCKETS", "budget_change", "BudgetChange",
           "Change", "change", "CHANGE_KEYS", "condition_counts", "ConditionCount", "cut_off_warnings", "Containment", "Contrast",
           "contrasts", "Count", "family_rows", "FamilyRow", "fingerprint_passing", "FormatAudit",
           "FormatRow", "Frozen", "gap_label", "known_gap", "leak_residual", "leak_rule", "LeakDrop", "LeakResidual",
           "LeakRule", "Meta", "milestone_types", "MilestoneTypes", "Missing", "missing_verdicts",
           "N_RESAMPLES", "NOT_RUN", "Ordering", "Pair", "pair", "primitive_ran", "q_family", "QFamily",
           "RankRow", "ranks", "Rates", "recovery_by_tau", "replication_column", "ReplicationColumn", "report_tables", "ReportInput", "ReportTables", "review_row",
           "ReviewRow", "SEED", "Share", "SolvedAlone", "specificity", "STAGE0", "Stage0", "stage0_stats", "student_tables",
           "StudentReport", "StudentTables", "Summary", "TAUS", "Truncation", "truncation", "TYPES", "types_by_outcome", "TypesByOutcome",
           "Versus", "WARN_SHARE", "WHY", "why_unreadable"]
