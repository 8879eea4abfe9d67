"""`ladder prim compile`: a teacher's primitives and plans, compiled through the one compile loop
(`compiler.loop.Compiler`): the teacher primitive from the problem alone (Fig. 10, provenance
``teacher-problem-only``) and the teacher plan, 3-6 procedural steps (Fig. 11), the guidance of PRIM's
Execution analysis (App. B.2); and the curation primitive, written with the answer and the reference
solution and classified in the taxonomy (Fig. 7, provenance ``teacher``): PRIM's draft of a gold.

The item is a stored family. A reply is checked — it states no gold answer or milestone gold and no
computed result (the primitive rung's leak and arithmetic checks, in the worker pool), each primitive
field is 1 to ``MAX_FIELD_WORDS`` words, a plan has 3 to 6 steps of at most ``MAX_STEP_WORDS`` words,
a classification uses the taxonomy's keys — and a failed check is re-asked with its errors. Every
attempt is stored (`primitive_attempts`, teacher ``prim-<kind>:<teacher>``); an accepted one becomes
the problem's primitive of that provenance by that teacher, or its plan. A family without a reference
solution gets no curation primitive (skipped before the teacher is paid).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..domains.math.primitive_compile import render_primitive_errors
from ..ladder.contract import Attempt, Checked, CompileDomain
from ..prompts import load
from ..schemas import CheckResult, Family, FamilyReport, Primitive
from ..schemas.prim import PrimPrimitive
from ..store import Store
from ..validators import check_family_in
from ..validators.primitive import CHECK_ARITHMETIC, CHECK_LEAK
from ..workers import WorkerPool
from .probe import problem_text

Kind = Literal["teacher-problem-only", "plan", "teacher"]
KINDS: tuple[str, ...] = ("teacher-problem-only", "plan", "teacher")
MAX_FIELD_WORDS = 120
MAX_STEP_WORDS = 60
CHECK_SHAPE = "prim_shape"
CHECK_TYPES = "prim_types"
CHECK_SOLUTION = "prim_solution"


class PrimitiveReply(BaseModel):
    essential_property: str
    solution_principle: str
    core_concept: str


class CurationReply(PrimitiveReply):
    primary_primitive_type: str
    secondary_primitive_types: list[str] = []
    classification_rationale: str = ""
    confidence: int | None = None

    def primitive(self, pid: str, author: str) -> PrimPrimitive:
        """The primitive it makes; a ValidationError names a type off the taxonomy."""
        return PrimPrimitive(pid=pid, essential_property=self.essential_property,
                             solution_principle=self.solution_principle, core_concept=self.core_concept,
                             primary_type=self.primary_primitive_type, secondary_types=self.secondary_primitive_types,
                             provenance="teacher", author=author)


class PlanReply(BaseModel):
    steps: list[str]


REPLIES: dict[str, type[BaseModel]] = {"teacher-problem-only": PrimitiveReply, "plan": PlanReply,
                                       "teacher": CurationReply}
PROMPTS: dict[str, str] = {"teacher-problem-only": "prim_teacher_primitive", "plan": "prim_teacher_plan",
                           "teacher": "prim_teacher_curation"}


def types_check(reply: CurationReply) -> CheckResult:
    try:
        reply.primitive("", "")
    except ValidationError as exc:
        return CheckResult(check=CHECK_TYPES, passed=False, reason=exc.errors()[0]["msg"])
    return CheckResult(check=CHECK_TYPES, passed=True, reason="the taxonomy's keys")


def shape(reply: PrimitiveReply | PlanReply) -> CheckResult:
    """The length rule of a primitive's fields or of a plan."""
    if isinstance(reply, PlanReply):
        long = [i + 1 for i, s in enumerate(reply.steps) if not s.strip() or len(s.split()) > MAX_STEP_WORDS]
        if not 3 <= len(reply.steps) <= 6:
            return CheckResult(check=CHECK_SHAPE, passed=False, reason=f"{len(reply.steps)} steps; give 3 to 6")
        if long:
            return CheckResult(check=CHECK_SHAPE, passed=False,
                               reason=f"step {long[0]} is empty or over {MAX_STEP_WORDS} words")
        return CheckResult(check=CHECK_SHAPE, passed=True, reason=f"{len(reply.steps)} steps")
    for name in PrimitiveReply.model_fields:
        value = getattr(reply, name)
        if not 1 <= len(value.split()) <= MAX_FIELD_WORDS:
            return CheckResult(check=CHECK_SHAPE, passed=False,
                               reason=f"{name} has {len(value.split())} words; give 1 to {MAX_FIELD_WORDS}")
    return CheckResult(check=CHECK_SHAPE, passed=True, reason="three fields of 1-3 sentences")


def text_of(reply: PrimitiveReply | PlanReply) -> str:
    if isinstance(reply, PlanReply):
        return "\n".join(reply.steps)
    return "\n".join(getattr(reply, name) for name in PrimitiveReply.model_fields)


class PrimCompileDomain(CompileDomain[Family, Family, BaseModel]):
    """One kind of teacher guidance for existing families, checked in ``pool``."""

    check_stage = "checking the guidance"
    uses_pool = True

    def __init__(self, kind: Kind, pool: WorkerPool | None = None, solutions: Mapping[str, str] | None = None) -> None:
        self.kind, self.pool, self.solutions = kind, pool, solutions or {}
        self.response_model = REPLIES[kind]  # type: ignore[misc]

    def unusable(self, problem: Family) -> CheckResult | None:
        if self.kind == "teacher" and problem.pid not in self.solutions:
            return CheckResult(check=CHECK_SOLUTION, passed=False,
                               reason="no reference solution (`ladder prim import` one) for a curation primitive")
        return None

    def teacher_messages(self, problem: Family) -> tuple[list[dict[str, str]], str]:
        prompt = load(PROMPTS[self.kind])
        values = {"problem": problem_text(problem)}
        if self.kind == "teacher":
            values |= {"answer": problem.parent_answer, "rationale": self.solutions[problem.pid]}
        return [{"role": "user", "content": prompt.render(**values)}], prompt.version

    async def check(self, reply: BaseModel, problem: Family, attempt: Attempt) -> Checked[Family]:
        assert isinstance(reply, (PrimitiveReply, PlanReply))
        candidate = problem.model_copy(update={"primitive": Primitive(text=text_of(reply), provenance="teacher")})
        report = await check_family_in(self.worker_pool(), candidate, parse_prose=False)
        kept = [c for c in report.checks if c.check in (CHECK_LEAK, CHECK_ARITHMETIC)]
        if self.kind == "teacher":  # the answer is the teacher's to see, never the primitive's to state
            kept.append(types_check(reply))  # type: ignore[arg-type]
        return Checked(problem, FamilyReport(pid=problem.pid, checks=[*kept, shape(reply)]))

    def reask(self, checked: Checked[Family]) -> str:
        return load("prim_teacher_retry").render(errors=render_primitive_errors(checked.errors))

    def stored_plan(self, reply: BaseModel, version: str) -> Any:
        return reply.model_dump_json()

    async def store_problem(self, store: Store, problem: Family) -> None:
        return None  # the family is its roadmap set's, stored already

    async def store_attempt(self, store: Store, problem: Family, source: str, attempt: int, *, plan: Any,
                            errors: list[dict[str, Any]], passed: bool) -> None:
        if passed and plan is not None:  # what the attempt made, stored before the attempt that made it
            if self.kind == "plan":
                await store.put_plan(problem.pid, source, PlanReply.model_validate_json(plan).steps)
            elif self.kind == "teacher":
                await store.put_primitive(CurationReply.model_validate_json(plan).primitive(problem.pid, source))
            else:
                fields = PrimitiveReply.model_validate_json(plan)
                await store.put_primitive(PrimPrimitive(pid=problem.pid, provenance="teacher-problem-only",
                                                        author=source, **fields.model_dump()))
        await store.put_primitive_attempt(problem, f"prim-{self.kind}:{source}", attempt, primitive=plan,
                                          errors=errors, passed=passed)
