"""`ladder compile --integrate-only`: a teacher writes the INTEGRATE step of families that have a
roadmap but none (the released ones: the release recovered theirs in a decompose-mode rerun, Appendix
B), in the one compile loop (`compiler.loop.Compiler`).

The loop's item is the stored family. The teacher sees the problem, its reference answer and its
roadmap with the golds, and returns the step (description, answer schema, gold); the family's
``integrate_matches_parent`` check (the gold equals the reference answer by the verifier, run in the
worker pool) sends its error back in a re-ask, up to ``max_attempts``. Every attempt is stored
(``Store.put_integrate_attempt``) with its errors or the reason it ended; an accepted step is written
onto the family (same pid, source and granularity). The step stays private: no student is shown it.
"""

from __future__ import annotations

from typing import Any

from ...ladder.contract import Attempt, Checked
from ...schemas import AnswerSchema, Family, Milestone, MilestoneType
from ...store import Store
from ...validators.family import CHECK_INTEGRATE
from .plan import PlannedMilestone, problem_of, student_prompt
from .primitive_compile import FamilyPartDomain, part_messages


class IntegratePlan(PlannedMilestone):
    """The INTEGRATE step as the teacher writes it (its type is INTEGRATE whatever it says)."""

    type: MilestoneType = MilestoneType.INTEGRATE
    answer_schema: AnswerSchema


def integrate_messages(family: Family) -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages for ``family`` and the prompt version."""
    return part_messages("teacher_integrate", problem_of(family), family,
                         [m for _, m in family.tested(keep_leaking=True)])


class IntegrateDomain(FamilyPartDomain[IntegratePlan]):
    """Existing families given an INTEGRATE step."""

    response_model = IntegratePlan
    check_stage = "checking the INTEGRATE step"
    checks = (CHECK_INTEGRATE,)
    retry = "teacher_integrate_retry"

    def teacher_messages(self, problem: Family) -> tuple[list[dict[str, str]], str]:
        return integrate_messages(problem)

    async def check(self, reply: IntegratePlan, problem: Family, attempt: Attempt) -> Checked[Family]:
        step = reply.model_copy(update={"type": MilestoneType.INTEGRATE})
        return await self.checked(problem.model_copy(update={"integrate": Milestone(
            prompt=student_prompt(problem_of(problem), step), answer=step.canonical_answer.strip(),
            type=MilestoneType.INTEGRATE, answer_schema=step.answer_schema, description=step.description.strip())}))

    def stored_plan(self, reply: IntegratePlan, version: str) -> Any:
        return reply.model_dump(mode="json", exclude={"type"})

    async def store_attempt(self, store: Store, problem: Family, source: str, attempt: int, *, plan: Any,
                            errors: list[dict[str, Any]], passed: bool) -> None:
        await store.put_integrate_attempt(problem, source, attempt, plan=plan, errors=errors, passed=passed)


__all__ = ["IntegrateDomain", "IntegratePlan", "integrate_messages"]
