"""Typed data of the protocol: problems, milestones, families, reports, rollouts, verdicts."""

from .models import (
    CONDITIONS,
    CheckResult,
    CodeProblem,
    CodeTest,
    Condition,
    Family,
    FamilyReport,
    MathProblem,
    Milestone,
    Provenance,
    Rollout,
    Verdict,
    parse_roadmap_set,
    to_released,
)
from .types import AnswerSchema, GradeStatus, Label, MilestoneType

__all__ = [
    "CONDITIONS",
    "AnswerSchema",
    "CheckResult",
    "CodeProblem",
    "CodeTest",
    "Condition",
    "Family",
    "FamilyReport",
    "GradeStatus",
    "Label",
    "MathProblem",
    "Milestone",
    "MilestoneType",
    "Provenance",
    "Rollout",
    "Verdict",
    "parse_roadmap_set",
    "to_released",
]
