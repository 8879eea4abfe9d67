"""The teacher's typed plan, and how it becomes a milestone family.

Field order matters: the model writes `answer_schema` before `description` before
`canonical_answer`, so it commits to a checkable format before it writes the step.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ...ladder.contract import at_most
from ...prompts import load
from ...schemas import AnswerSchema, CheckResult, Family, MathProblem, Milestone, MilestoneType, Primitive, Provenance

Granularity = Literal["coarse", "default", "fine"]

# Bounds of a plan (`at_most`): a flood of milestones would each cost an independent solve. Twice
# the finest granularity's 10 milestones; descriptions and golds far above the release's longest
# (under 500 and 100 characters).
MAX_MILESTONES = 20
MAX_DESCRIPTION = 4_000
MAX_GOLD = 1_000

# What the student is told to put in \boxed{}, by schema.
_OUTPUT_INSTRUCTION = {
    AnswerSchema.NUMBER: "Put the number in \\boxed{}.",
    AnswerSchema.EXPR: "Put the simplified expression in \\boxed{}.",
    AnswerSchema.EQUATION: "Put the equation in \\boxed{}.",
    AnswerSchema.INEQUALITY: "Put the inequality in \\boxed{}.",
    AnswerSchema.SET: "Put the set in \\boxed{}.",
    AnswerSchema.INTERVAL: "Put the interval in \\boxed{}.",
    AnswerSchema.TUPLE_LIST: "Put the tuple (or list of tuples) in \\boxed{}.",
    AnswerSchema.MATRIX_VECTOR: "Put the matrix or vector in \\boxed{}.",
    AnswerSchema.MCQ_STRING: "Put the letter of the correct option in \\boxed{}.",
}


class PlannedMilestone(BaseModel):
    type: MilestoneType
    answer_schema: AnswerSchema
    description: Annotated[str, at_most(MAX_DESCRIPTION, "characters")] = Field(
        description="standalone sub-goal, ending with what to output")
    canonical_answer: Annotated[str, at_most(MAX_GOLD, "characters")] = Field(
        description="one value, expression, equation, inequality, interval, set or tuple; no prose")


class TeacherPlan(BaseModel):
    """A milestone plan; the last milestone is the private INTEGRATE step."""

    milestones: Annotated[list[PlannedMilestone], at_most(MAX_MILESTONES, "milestones")] = Field(min_length=2)
    # the key idea (docs/primitive.md), written after the roadmap; optional so that a teacher that
    # leaves it out still compiles a roadmap (`ladder compile --primitives-only` can add it later)
    primitive: str | None = Field(default=None, description="one short sentence: the key idea, no value")


def plan_errors(plan: TeacherPlan) -> list[CheckResult]:
    """Structural faults of the plan itself, before it becomes a family: what is wrong, where
    (milestones numbered from 1), and what would be right."""
    last = len(plan.milestones)
    at = [i for i, m in enumerate(plan.milestones, 1) if m.type is MilestoneType.INTEGRATE]
    if at == [last]:
        return []
    if not at:
        reason = (f"no milestone is INTEGRATE: make the last one (milestone {last}) the INTEGRATE step that "
                  "combines the others into the final answer")
    elif len(at) > 1:
        reason = (f"milestones {', '.join(map(str, at))} are INTEGRATE: exactly one may be, the last (milestone "
                  f"{last}); give the others another type")
    else:
        reason = (f"milestone {at[0]} of {last} is INTEGRATE: the INTEGRATE step must be the last milestone; "
                  f"move it after milestone {last}")
    return [CheckResult(check="plan", passed=False, reason=reason)]


TeacherPrompt = Literal["toolkit", "paper"]
TEACHER_PROMPTS: tuple[str, ...] = ("toolkit", "paper")
PAPER_PROMPT = "teacher_math_paper"  # Appendix U's text, copied as published


def teacher_messages(problem: MathProblem, granularity: Granularity,
                     prompt: TeacherPrompt = "toolkit") -> tuple[list[dict[str, str]], str]:
    """The first-attempt messages and the prompt version (hash of the templates as rendered). ``prompt``:
    the toolkit's system prompt (Appendix U's rules with ANSWER FORMAT, NO-LEAK and PRIMITIVE sections
    and the granularity's), or ``paper``: Appendix U's as published, nothing added (default granularity)."""
    if prompt == "paper":
        names: tuple[str, ...] = (PAPER_PROMPT, "teacher_user")
        system = load(PAPER_PROMPT).text
    else:
        system = load("teacher_math").render(granularity=load(f"granularity_{granularity}").text)
        names = ("teacher_math", f"granularity_{granularity}", "teacher_user")
    solution = f"\nReference solution:\n{problem.solution}\n" if problem.solution else ""
    user = load("teacher_user").render(problem=problem.problem, answer=problem.answer, solution=solution)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], "-".join(
        load(n).version for n in names)


def student_prompt(problem_text: str, planned: PlannedMilestone) -> str:
    return load("milestone").render(
        problem=problem_text.strip(),
        description=planned.description.strip(),
        output_instruction=_OUTPUT_INSTRUCTION[planned.answer_schema],
    )


_PARENT_WRAPPER = "Solve the following problem. Provide your final answer clearly.\n\nProblem:\n"


def parent_prompt(problem_text: str) -> str:
    """The released families' parent prompt wrapper, so compiled and imported families probe alike."""
    return f"{_PARENT_WRAPPER}{problem_text.strip()}\n"


def problem_of(family: Family) -> str:
    """The problem a family's parent prompt wraps (the prompt itself where it wraps none)."""
    return family.parent_prompt.removeprefix(_PARENT_WRAPPER).strip()


def to_family(plan: TeacherPlan, problem: MathProblem, provenance: Provenance) -> Family:
    milestones: list[Milestone] = []
    integrate: Milestone | None = None
    for planned in plan.milestones:
        milestone = Milestone(
            prompt=student_prompt(problem.problem, planned),
            answer=planned.canonical_answer.strip(),
            type=planned.type,
            answer_schema=planned.answer_schema,
            description=planned.description.strip(),
        )
        if planned.type is MilestoneType.INTEGRATE:
            integrate = milestone  # plans with other than one INTEGRATE are rejected before this
            continue
        milestones.append(milestone)
    primitive = (plan.primitive or "").strip()
    return Family(
        pid=problem.pid,
        parent_prompt=parent_prompt(problem.problem),
        parent_answer=problem.answer,
        milestones=milestones,
        integrate=integrate,
        provenance=provenance,
        primitive=None if not primitive else Primitive(
            text=primitive, provenance="teacher", teacher=provenance.source,
            prompt_hash=provenance.prompt_hash),
    )
