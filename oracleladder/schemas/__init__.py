"""Typed data of the protocol: problems, milestones, families, reports, rollouts, verdicts."""

from .models import (
    CONDITION_NAMES,
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
    parse_condition,
    parse_roadmap_set,
    to_released,
)
from .types import AnswerSchema, GradeStatus, Label, MilestoneType

__all__ = [
    "CONDITION_NAMES",
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
    "parse_condition",
    "parse_roadmap_set",
    "to_released",
]
