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
from ...prompts import load
from ...schemas import AnswerSchema, Family, FamilyReport, Milestone, MilestoneType
from ...store import Store
from ...validators import check_family_in
from ...validators.family import CHECK_INTEGRATE
from .plan import PlannedMilestone, problem_of, student_prompt
from .primitive_compile import FamilyPartDomain, render_primitive_errors
from .prompts import description, roadmap_text

PROMPTS = ("teacher_integrate", "teacher_integrate_user")


class IntegratePlan(PlannedMilestone):
    """The INTEGRATE step as the teacher writes it (its type is INTEGRATE whatever it says)."""

    type: MilestoneType = MilestoneType.INTEGRATE
    answer_schema: AnswerSchema


def integrate_messages(family: Family) -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages for ``family`` and the prompt version (hash of both templates)."""
    roadmap = [m for _, m in family.tested(keep_leaking=True)]
    user = load("teacher_integrate_user").render(
        problem=problem_of(family), answer=family.parent_answer,
        roadmap=roadmap_text([description(m) for m in roadmap], [m.answer for m in roadmap]))
    version = "-".join(load(n).version for n in PROMPTS)
    return [{"role": "system", "content": load("teacher_integrate").text}, {"role": "user", "content": user}], version


class IntegrateDomain(FamilyPartDomain[IntegratePlan]):
    """Existing families given an INTEGRATE step."""

    response_model = IntegratePlan
    check_stage = "checking the INTEGRATE step"

    def teacher_messages(self, problem: Family) -> tuple[list[dict[str, str]], str]:
        return integrate_messages(problem)

    async def check(self, reply: IntegratePlan, problem: Family, attempt: Attempt) -> Checked[Family]:
        step = reply.model_copy(update={"type": MilestoneType.INTEGRATE})
        candidate = problem.model_copy(update={"integrate": Milestone(
            prompt=student_prompt(problem_of(problem), step), answer=step.canonical_answer.strip(),
            type=MilestoneType.INTEGRATE, answer_schema=step.answer_schema, description=step.description.strip())})
        report = await check_family_in(self.worker_pool(), candidate, parse_prose=False)
        # the family's own checks run too; only the step's are this attempt's
        return Checked(candidate, FamilyReport(pid=problem.pid,
                                               checks=[c for c in report.checks if c.check == CHECK_INTEGRATE]))

    def reask(self, checked: Checked[Family]) -> str:
        return load("teacher_integrate_retry").render(errors=render_primitive_errors(checked.errors))

    def stored_plan(self, reply: IntegratePlan, version: str) -> Any:
        return reply.model_dump(mode="json", exclude={"type"})

    async def store_attempt(self, store: Store, problem: Family, source: str, attempt: int, *, plan: Any,
                            errors: list[dict[str, Any]], passed: bool) -> None:
        await store.put_integrate_attempt(problem, source, attempt, plan=plan, errors=errors, passed=passed)


__all__ = ["IntegrateDomain", "IntegratePlan", "integrate_messages"]
