"""Typed data of the protocol: problems, milestones, families, reports, rollouts, verdicts."""

from .conditions import LADDER, Condition, Spec, Versus
from .models import (
    CheckResult,
    CodeProblem,
    CodeTest,
    Correction,
    Family,
    FamilyReport,
    MathProblem,
    Milestone,
    Primitive,
    Provenance,
    Rollout,
    Verdict,
    one_roadmap_set,
    parse_roadmap_set,
    teacher_prompts,
    to_released,
)
from .types import AnswerSchema, GradeStatus, Label, MilestoneType

__all__ = [
    "AnswerSchema",
    "CheckResult",
    "CodeProblem",
    "CodeTest",
    "Condition",
    "Correction",
    "Family",
    "FamilyReport",
    "GradeStatus",
    "Label",
    "MathProblem",
    "Milestone",
    "MilestoneType",
    "LADDER",
    "Primitive",
    "Provenance",
    "Rollout",
    "Spec",
    "Verdict",
    "Versus",
    "one_roadmap_set",
    "parse_roadmap_set",
    "teacher_prompts",
    "to_released",
]
