"""The math domain: competition problems compiled into milestone families (paper Sections 2-3),
graded by the deterministic verifier.

The teacher returns a `TeacherPlan` (`plan`) that becomes a `Family`; the deterministic
validators check it in the worker pool, then the teacher solves each milestone from its
student-facing prompt alone. The ladder is Stage 0 (each tested milestone) and the six conditions
with their controls (`prompts`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ... import verify
from ..._lazy import lazy_module
from ...ladder.contract import Attempt, Checked, Domain, Job, ProbeConfig, Settings
from ...ladder.outcomes import FamilyResults, results_from_rollouts
from ...prompts import load
from ...schemas import (
    LADDER,
    CheckResult,
    Family,
    FamilyReport,
    MathProblem,
    Provenance,
    Rollout,
    Verdict,
    one_roadmap_set,
    parse_roadmap_set,
)
from ...schemas.conditions import C1, PRIMITIVE_SHOWS
from ...schemas.jsonl import InputError, OnDuplicate, did_you_mean
from ...store import Store
from ...validators import (
    answer_problem,
    check_family_in,
    independent_solve_check,
    reference_answer_problem,
    render_errors,
)
from ...validators.leak import with_leak_rule
from ...validators.reference import CHECK as REFERENCE_CHECK
from ...verify import GradingFailed
from ...workers import WorkerPool
from .plan import (
    TEACHER_PROMPTS,
    Granularity,
    TeacherPlan,
    TeacherPrompt,
    parent_prompt,
    plan_errors,
    teacher_messages,
    to_family,
)
from .primitive import family_primitive, primitive_prompt
from .prompts import condition_prompt, messages as student_messages, stage0_prompt, versions as prompt_versions

if TYPE_CHECKING:
    from ...construction import pool as _pools
else:  # pyarrow (~40 MB of shared libraries): loaded when a problem pool is first read, not by a probe
    _pools = lazy_module("oracleladder.construction.pool")


def target_gold(family: Family, target: str, use_corrections: bool = False) -> str:
    """The gold answer a rollout of ``target`` ("m<i>" or a condition) is graded against."""
    if target.startswith("m"):
        return family.milestones[int(target[1:])].answer
    return family.reference_answer(use_corrections)


def collect_results(families: Sequence[Family], rollouts: Sequence[Rollout], *,
                    use_corrections: bool = False, keep_leaking: bool = False) -> list[FamilyResults]:
    """Per family, the K verdicts of each tested milestone (Stage 0; after the leak rule unless
    ``keep_leaking``) and of each condition; an ungraded rollout (grading failed) says nothing about
    the student and is left out."""
    return results_from_rollouts(
        [(f.pid, [i for i, _ in f.tested(use_corrections, keep_leaking)]) for f in families],
        ((r.pid, r.target, r.k, r.verdict.accepted) for r in rollouts if r.verdict.graded),
    )


async def roadmap_set(store: Store, name: str) -> list[Family]:
    """The families of one roadmap set ('release', a teacher, or TEACHER@coarse|fine); an InputError
    for an unknown name or an empty set, naming the sources the store holds."""
    try:
        source, granularity = parse_roadmap_set(name)
        families = [with_leak_rule(f) for f in await store.families(source=source, granularity=granularity)]
        one_roadmap_set(name, families)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if not families:
        sources = await store.sources()
        raise InputError(f"{store.path} holds no families of roadmap set '{name}'{did_you_mean(name, sources)} "
                         f"(sources in the store: {', '.join(sources) or 'none'}); run `ladder import` or "
                         "`ladder compile` first")
    return families


class MathDomain(Domain[MathProblem, Family, TeacherPlan]):
    """Math problems into milestone families; the validators and the verifier run in ``pool``."""

    name = "math"
    response_model = TeacherPlan
    confirm_stage = "independent solve"
    verifier = True
    uses_pool = True

    def __init__(self, pool: WorkerPool | None = None, *, granularity: Granularity = "default",
                 independent_solve: bool = True, fields: Sequence[str] = (), null_values: Sequence[str] = (),
                 encoding: str | None = None, teacher_prompt: TeacherPrompt = "toolkit") -> None:
        if teacher_prompt not in TEACHER_PROMPTS:
            raise InputError(f"unknown teacher prompt '{teacher_prompt}'; known: {', '.join(TEACHER_PROMPTS)}")
        if teacher_prompt == "paper" and granularity != "default":
            raise InputError("the paper's teacher prompt (Appendix U) has no granularity section: "
                             "--teacher-prompt paper compiles at the default granularity only")
        self.pool = pool
        self.granularity = granularity
        self.independent_solve = independent_solve
        self.fields = tuple(fields)
        self.null_values = tuple(null_values)
        self.encoding = encoding
        self.teacher_prompt = teacher_prompt
        # the declared conditions as the domain is made: one registered later is in the next run's domain
        self.conditions, self.optional_conditions = LADDER.default, LADDER.optional

    @classmethod
    def from_settings(cls, settings: Settings) -> MathDomain:
        return cls(granularity=settings.granularity, independent_solve=settings.independent_solve,  # type: ignore[arg-type]
                   fields=settings.fields, null_values=settings.null_values, encoding=settings.encoding,
                   teacher_prompt=settings.teacher_prompt)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ compile

    def read_problems(self, path: Path, on_duplicate: OnDuplicate) -> list[MathProblem]:
        return _pools.read_pool(path, _pools.parse_fields(list(self.fields)), on_duplicate,
                                null_values=self.null_values, encoding=self.encoding)

    def unusable(self, problem: MathProblem) -> CheckResult | None:
        why = answer_problem(problem.answer)  # no roadmap can be graded against it
        return None if why is None else CheckResult(check=REFERENCE_CHECK, passed=False, reason=why)

    def teacher_messages(self, problem: MathProblem) -> tuple[list[dict[str, str]], str]:
        return teacher_messages(problem, self.granularity, self.teacher_prompt)  # type: ignore[arg-type]

    async def check(self, reply: TeacherPlan, problem: MathProblem, attempt: Attempt) -> Checked[Family]:
        provenance = Provenance(source=attempt.source, prompt_hash=attempt.version, granularity=self.granularity,
                                attempts=attempt.index + 1, teacher_prompt=self.teacher_prompt)
        family = to_family(reply, problem, provenance)
        structural = plan_errors(reply)
        report = (FamilyReport(pid=problem.pid, checks=structural) if structural
                  else await check_family_in(self.worker_pool(), family, parse_prose=False))
        return Checked(family, report)

    async def confirm(self, checked: Checked[Family], problem: MathProblem, attempt: Attempt) -> Checked[Family]:
        """T.solve(M_i): the teacher answers each milestone from its student-facing prompt only."""
        if not self.independent_solve:
            return checked
        client, pool = attempt.client, self.worker_pool()

        async def solve(prompt: str) -> str:
            request = client.request(student_messages(prompt), k=attempt.index, temperature=0.0,
                                     max_tokens=attempt.max_tokens)
            return (await client.complete(request)).text

        async def grade(response: str, gold: str) -> Verdict:
            verdict = await verify.grade(pool, response, gold)
            if not verdict.graded:  # a broken grader says nothing about the milestone: end the attempt
                raise GradingFailed(verdict.reason)
            return verdict

        family = checked.family
        solved = await asyncio.gather(*(independent_solve_check(m, solve, grade, index=i) for i, m in family.tested()))
        return Checked(family, FamilyReport(pid=family.pid, checks=list(solved)))

    def reask(self, checked: Checked[Family]) -> str:
        return load("teacher_retry").render(errors=render_errors(checked.report, checked.family))

    async def keep(self, store: Store, checked: Checked[Family], source: str, *, attempt: int,
                   version: str) -> None:
        if not checked.errors:  # its leak check passed: no milestone for the leak rule to drop
            await store.put_family(checked.family.model_copy(update={"leaking": []}))

    # ------------------------------------------------------------------ probe

    async def load_families(self, store: Store, source: str) -> list[Family]:
        return await roadmap_set(store, source)

    def rollout_source(self, family: Family, source: str) -> str:
        return family.provenance.roadmap_set

    def plan_jobs(self, families: Sequence[Family], config: ProbeConfig, donors: Sequence[Family]) -> list[Job[Family]]:
        jobs: list[Job[Family]] = []
        for family in families:
            if config.stage0:
                for index, milestone in family.tested(config.use_corrections, config.keep_leaking):
                    msgs = stage0_prompt(milestone)
                    jobs += [Job(family, f"m{index}", k, msgs) for k in range(config.k)]
            for condition in config.conditions or self.conditions:
                if LADDER[condition].shows in PRIMITIVE_SHOWS:  # only where the family has a primitive (skips are counted)
                    if family_primitive(family, config.primitive_fallback) is None:
                        continue
                    msgs, _ = primitive_prompt(family, condition, donors, seed=config.seed,
                                               fallback=config.primitive_fallback)
                else:
                    msgs, _ = condition_prompt(family, condition, donors, seed=config.seed,
                                               use_corrections=config.use_corrections,
                                               keep_leaking=config.keep_leaking)
                jobs += [Job(family, condition, k, msgs) for k in range(config.k)]
        return jobs

    def student_prompts(self, config: ProbeConfig) -> dict[str, str]:
        return prompt_versions(config.conditions or self.conditions, system=config.system_prompt)

    async def grade(self, job: Job[Family], response: str, config: ProbeConfig) -> Verdict:
        gold = target_gold(job.family, job.target, config.use_corrections)
        return await verify.grade(self.worker_pool(), response, gold, grader=config.grader,
                                  problem=job.family.parent_prompt)

    def collect_results(self, families: Sequence[Family], rollouts: Sequence[Rollout], *,
                        use_corrections: bool = False, keep_leaking: bool = False) -> list[FamilyResults]:
        return collect_results(families, rollouts, use_corrections=use_corrections, keep_leaking=keep_leaking)

    def target_gold(self, family: Family, target: str, use_corrections: bool = False) -> str:
        return target_gold(family, target, use_corrections)

    def ungradable(self, family: Family, use_corrections: bool = False) -> str | None:
        return reference_answer_problem(family, use_corrections)

    # ------------------------------------------------------------------ the raw screen

    def direct_messages(self, problem: MathProblem) -> list[dict[str, str]]:
        family = Family(pid=problem.pid, parent_prompt=parent_prompt(problem.problem), parent_answer=problem.answer,
                        milestones=[])
        return condition_prompt(family, C1.name, [])[0]

    async def grade_direct(self, problem: MathProblem, response: str, config: ProbeConfig) -> Verdict:
        return await verify.grade(self.worker_pool(), response, problem.answer, grader=config.grader,
                                  problem=parent_prompt(problem.problem))


__all__ = ["MathDomain", "collect_results", "roadmap_set", "target_gold"]
