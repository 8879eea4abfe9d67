"""`ladder prim compile`: the teacher's guidance of PRIM's Execution analysis (App. B.2), compiled
through the one compile loop (`compiler.loop.Compiler`): the teacher primitive from the problem alone
(Fig. 10, provenance ``teacher-problem-only``) and the teacher plan, 3-6 procedural steps (Fig. 11).

The item is a stored family; the teacher sees its problem only. A reply is checked — it states no
gold answer or milestone gold and no computed result (the primitive rung's leak and arithmetic checks,
in the worker pool), each primitive field is 1 to ``MAX_FIELD_WORDS`` words, a plan has 3 to 6 steps
of at most ``MAX_STEP_WORDS`` words — and a failed check is re-asked with its errors. Every attempt is
stored (`primitive_attempts`, teacher ``prim-<kind>:<teacher>``); an accepted one becomes the
problem's primitive of that provenance by that teacher, or its plan.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

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

Kind = Literal["teacher-problem-only", "plan"]
KINDS: tuple[str, ...] = ("teacher-problem-only", "plan")
MAX_FIELD_WORDS = 120
MAX_STEP_WORDS = 60
CHECK_SHAPE = "prim_shape"


class PrimitiveReply(BaseModel):
    essential_property: str
    solution_principle: str
    core_concept: str


class PlanReply(BaseModel):
    steps: list[str]


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
    for name, value in reply:
        if not 1 <= len(value.split()) <= MAX_FIELD_WORDS:
            return CheckResult(check=CHECK_SHAPE, passed=False,
                               reason=f"{name} has {len(value.split())} words; give 1 to {MAX_FIELD_WORDS}")
    return CheckResult(check=CHECK_SHAPE, passed=True, reason="three fields of 1-3 sentences")


def text_of(reply: PrimitiveReply | PlanReply) -> str:
    return "\n".join(reply.steps) if isinstance(reply, PlanReply) else "\n".join(v for _, v in reply)


class PrimCompileDomain(CompileDomain[Family, Family, BaseModel]):
    """One kind of teacher guidance for existing families, checked in ``pool``."""

    check_stage = "checking the guidance"
    uses_pool = True

    def __init__(self, kind: Kind, pool: WorkerPool | None = None) -> None:
        self.kind, self.pool = kind, pool
        self.prompt = "prim_teacher_plan" if kind == "plan" else "prim_teacher_primitive"
        self.response_model = PlanReply if kind == "plan" else PrimitiveReply  # type: ignore[misc]

    def teacher_messages(self, problem: Family) -> tuple[list[dict[str, str]], str]:
        prompt = load(self.prompt)
        return [{"role": "user", "content": prompt.render(problem=problem_text(problem))}], prompt.version

    async def check(self, reply: BaseModel, problem: Family, attempt: Attempt) -> Checked[Family]:
        assert isinstance(reply, (PrimitiveReply, PlanReply))
        candidate = problem.model_copy(update={"primitive": Primitive(text=text_of(reply), provenance="teacher")})
        report = await check_family_in(self.worker_pool(), candidate, parse_prose=False)
        kept = [c for c in report.checks if c.check in (CHECK_LEAK, CHECK_ARITHMETIC)]
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
            else:
                fields = PrimitiveReply.model_validate_json(plan)
                await store.put_primitive(PrimPrimitive(pid=problem.pid, provenance="teacher-problem-only",
                                                        author=source, **fields.model_dump()))
        await store.put_primitive_attempt(problem, f"prim-{self.kind}:{source}", attempt, primitive=plan,
                                          errors=errors, passed=passed)
