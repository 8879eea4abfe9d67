"""The replication view's table (paper Table 2, the explainer's Figure 6): several roadmap sets side by side,
each read for its own student at its own threshold tau, the families solved under the unaided prompt, the
controls and the matched help. A set's column counts a family solved under a condition when at least tau of
its K attempts are correct (`condition_counts`, as every report counts it); a condition not run on a set is
None ("not run"), never 0."""

from __future__ import annotations

from ...ladder.outcomes import FamilyResults
from ...schemas.conditions import LADDER
from .base import Frozen
from .student import ConditionCount, Missing, condition_counts


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


def replication_column(source: str, student: str, tau: int, setting: str, results: list[FamilyResults],
           missing: Missing | dict) -> ReplicationColumn:
    """The column of one roadmap set: its families' solved counts per condition of `specificity` at ``tau``."""
    counts = condition_counts(results, tau)
    return ReplicationColumn(source=source, student=student, tau=tau, setting=setting, n=len(results),
                             conditions={c: counts[c] for c in specificity()}, missing=Missing.model_validate(missing))
