"""A third domain, written only against `oracleladder.domains.Domain`: arithmetic word problems,
graded by exact integer match. The tests register it (`register_domain(ArithDomain)`) and run it
through the compile and probe loops and the `ladder` command, which know nothing of it.

The teacher splits a problem into steps, each a question with an integer answer, and gives the final
answer; a plan passes when its final answer is the problem's and its last step answers the problem.
The ladder: Stage 0 asks each step alone ("m<i>"); C1 the problem; C2 the problem with the step
questions; C3 the problem with the steps and their answers. An answer is right when the last integer
in it is the gold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from oracleladder.ladder import Attempt, Checked, Domain, Job, ProbeConfig
from oracleladder.ladder.outcomes import FamilyResults, results_from_rollouts
from oracleladder.schemas import CheckResult, Condition, FamilyReport, MathProblem, Rollout, Verdict
from oracleladder.schemas.jsonl import InputError, OnDuplicate, read_unique
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.validators import render_failures


class Step(BaseModel):
    question: str = Field(description="one arithmetic question, answerable alone")
    answer: int


class ArithPlan(BaseModel):
    steps: list[Step] = Field(min_length=1)
    answer: int


@dataclass(frozen=True)
class ArithFamily:
    problem: MathProblem
    plan: ArithPlan

    @property
    def pid(self) -> str:
        return self.problem.pid


_INT = re.compile(r"-?\d+")


def _messages(user: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}]


class ArithDomain(Domain[MathProblem, ArithFamily, ArithPlan]):
    name = "arith"
    response_model = ArithPlan
    conditions: tuple[Condition, ...] = ("C1_direct", "C2_descriptions", "C3_gold_answers")

    def read_problems(self, path: Path, on_duplicate: OnDuplicate) -> list[MathProblem]:
        return read_unique(path, MathProblem, on_duplicate)

    def teacher_messages(self, problem: MathProblem) -> tuple[list[dict[str, str]], str]:
        system = "Arithmetic tutor: split the word problem into steps. Reply with JSON {steps: [{question, answer}], answer}."
        return [{"role": "system", "content": system}, {"role": "user", "content": problem.problem}], "arith-1"

    async def check(self, reply: ArithPlan, problem: MathProblem, attempt: Attempt) -> Checked[ArithFamily]:
        gold = int(problem.answer)
        checks = [CheckResult(check="final", passed=reply.answer == gold,
                              reason=f"the final answer is {reply.answer}, the problem's is {gold}"),
                  CheckResult(check="last_step", passed=reply.steps[-1].answer == reply.answer, milestone=len(reply.steps) - 1,
                              reason=f"the last step answers {reply.steps[-1].answer}, not the final answer")]
        return Checked(ArithFamily(problem, reply), FamilyReport(pid=problem.pid, checks=checks))

    def reask(self, checked: Checked[ArithFamily]) -> str:
        return render_failures(checked.report, whole="Plan", part=lambda i: f"Step {i + 1}",
                               intro="The plan for {pid} failed {n} check(s); fix them:")

    async def load_families(self, store: Store, source: str) -> list[ArithFamily]:
        families = []
        for problem in await store.problems("math"):
            passing = [a.plan for a in await store.compile_attempts(problem.pid, source) if a.passed]
            try:
                families += [ArithFamily(problem, ArithPlan.model_validate(passing[-1]))] if passing else []
            except ValidationError:  # another domain's plan under the same teacher
                continue
        if not families:
            raise InputError(f"{store.path} holds no arithmetic plans from '{source}'")
        return families

    def plan_jobs(self, families: Sequence[ArithFamily], config: ProbeConfig,
                  donors: Sequence[ArithFamily]) -> list[Job[ArithFamily]]:
        jobs: list[Job[ArithFamily]] = []
        for f in families:
            if config.stage0:
                for i, step in enumerate(f.plan.steps):
                    jobs += [Job(f, f"m{i}", k, _messages(step.question)) for k in range(config.k)]
            for condition in config.conditions or self.conditions:
                hint = {"C1_direct": "",
                        "C2_descriptions": "".join(f"\nStep: {s.question}" for s in f.plan.steps),
                        "C3_gold_answers": "".join(f"\nStep: {s.question} = {s.answer}" for s in f.plan.steps)}
                jobs += [Job(f, condition, k, _messages(f.problem.problem + hint[condition])) for k in range(config.k)]
        return jobs

    def student_prompts(self, config: ProbeConfig) -> dict[str, str]:
        return {}  # its student messages are written inline, with no template

    async def grade(self, job: Job[ArithFamily], response: str, config: ProbeConfig) -> Verdict:
        plan = job.family.plan
        gold = plan.steps[int(job.target[1:])].answer if job.target.startswith("m") else plan.answer
        found = _INT.findall(response)
        if not found:
            return Verdict(label=Label.NOT_ACCEPT, reason="no integer in the answer", extracted=None)
        ok = int(found[-1]) == gold
        return Verdict(label=Label.ACCEPT if ok else Label.NOT_ACCEPT, reason=f"{found[-1]} {'=' if ok else '!='} {gold}",
                       extracted=found[-1])

    def collect_results(self, families: Sequence[ArithFamily], rollouts: Sequence[Rollout], *,
                        use_corrections: bool = False, keep_leaking: bool = False) -> list[FamilyResults]:
        return results_from_rollouts([(f.pid, range(len(f.plan.steps))) for f in families],
                                     ((r.pid, r.target, r.k, r.verdict.accepted) for r in rollouts if r.verdict.graded))
