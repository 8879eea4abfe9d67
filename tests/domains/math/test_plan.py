"""A plan's structural faults say what is wrong, where, and what would be right."""
from __future__ import annotations

import pytest

from oracleladder.domains.math.plan import PlannedMilestone, TeacherPlan, plan_errors
from oracleladder.schemas.types import AnswerSchema, MilestoneType


def _plan(*types: MilestoneType) -> TeacherPlan:
    return TeacherPlan(milestones=[PlannedMilestone(type=t, answer_schema=AnswerSchema.NUMBER,
                                                    description=f"Find step {i}.", canonical_answer=str(i))
                                   for i, t in enumerate(types)])


K, C, I = MilestoneType.KEY_MOVE, MilestoneType.COMPUTE, MilestoneType.INTEGRATE  # noqa: E741 - the paper's letters


@pytest.mark.parametrize("types,reason", [
    ((K, C, I), None),
    ((K, I, C), "milestone 2 of 3 is INTEGRATE: the INTEGRATE step must be the last milestone; move it after "
                "milestone 3"),
    ((K, C, C), "no milestone is INTEGRATE: make the last one (milestone 3) the INTEGRATE step that combines the "
                "others into the final answer"),
    ((I, C, I), "milestones 1, 3 are INTEGRATE: exactly one may be, the last (milestone 3); give the others "
                "another type"),
])
def test_plan_errors_say_where_and_what_would_be_right(types: tuple[MilestoneType, ...], reason: str | None) -> None:
    errors = plan_errors(_plan(*types))
    assert [e.reason for e in errors] == ([] if reason is None else [reason])
