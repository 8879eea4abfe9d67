"""The probe stages of `Experiment`: a student probed on a roadmap set, a plain benchmark probe, and the
ungraded answers graded again."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._lazy import lazy_module
from ..audit.format import finish_reasons
from ..clients.function import ModelFunction
from ..construction.screen import DIRECT
from ..domains.math.primitive import without_primitive
from ..domains.math.prompts import borrows_milestones
from ..ladder import (
    Job,
    ProbeConfig as JobConfig,  # what the domain plans and grades a probe's jobs by
)
from ..ladder.contract import HasPid
from ..probe.runner import asked_jobs, regrade as regrade_rollouts, run_probe, uncached_calls
from ..report.palette import n_families
from ..report.tables import truncation
from ..schemas import (
    LADDER,
    Family,
    Provenance,
    Rollout,
    Verdict,
    teacher_prompts,
)
from ..schemas.conditions import C2P_RANDOM
from ..schemas.types import GradeStatus
from ..store import FailedJob
from .benchmark_scores import BENCHMARK, benchmark_scores
from .configs import BenchmarkConfig, ProbeConfig, configured
from .core import ExperimentCore
from .endpoint import CONCURRENCY, Endpoint, as_endpoint
from .errors import Arg, ExperimentError
from .results import (
    BenchmarkResult,
    JobFailure,
    ProbeEstimate,
    ProbeResult,
    RegradeResult,
)
from .run import Progress, calling, no_progress, recorded

if TYPE_CHECKING:
    from ..construction import pool as _pools
else:  # pyarrow behind it: loaded by a benchmark probe, not by `ladder --help`
    _pools = lazy_module("oracleladder.construction.pool")

F = TypeVar("F", bound=HasPid)  # a family of any domain


def chosen_families(families: Sequence[F], pids: Sequence[str], source: str) -> list[F]:
    """The families of ``pids``, in the set's order; a pid the set does not hold is refused."""
    have = {f.pid for f in families}
    unknown = [p for p in dict.fromkeys(pids) if p not in have]
    if unknown:
        raise ExperimentError(f"roadmap set '{source}' holds no family {', '.join(unknown)}")
    wanted = set(pids)
    return [f for f in families if f.pid in wanted]


def _nothing_to_probe(families: Sequence[HasPid], source: str, config: JobConfig,
                      skipped: set[str]) -> tuple[str | Arg, ...]:
    """Why a probe has no job: the error's parts (`errors.Arg`)."""
    asked = [*(["every condition"] if config.conditions is None else config.conditions),
             *(["Stage 0"] if config.stage0 else [])]
    unusable: tuple[str | Arg, ...] = ()
    if skipped:
        unusable = (f"; {len(skipped)} of them have an unusable reference answer, whose parent jobs are skipped (",
                    Arg("include_unusable", True, flag="--include-unusable"), " asks them)")
    return (f"nothing to probe: {n_families(len(families))} of '{source}' selected, and no job at "
            f"{', '.join(asked) or 'no condition'}", *unusable)



class ProbeStages(ExperimentCore):
    """Mixed into `Experiment`."""

    async def probe(self, student: str | Endpoint | ModelFunction, config: ProbeConfig | None = None, *,
                    name: str | None = None, version: str | None = None, progress: Progress | None = None,
                    **options: Any) -> ProbeResult | ProbeEstimate:
        """Probe a student on one roadmap set: Stage 0 and the parent ladder with its controls (code:
        the helper test and C1-C3). Cached and resumable. Its options are a `ProbeConfig`'s fields, given
        as ``config`` or as keywords (``k=4``; over ``config`` where both are given):
        ``conditions``: names (C1 or C1_direct, ...),
        default the domain's; ``primitive`` adds the primitive rung (C2-primitive and its control), run
        on the families with a primitive (with ``primitive_fallback``, a KEY_MOVE description for the
        others). ``limit``: probe the first N families; ``shard``: only those of that shard
        (`ladder.shards`); the controls still draw from the whole set. ``pids``: probe only these
        families (before ``limit``). ``system_prompt`` False leaves the student's system message out of
        every request (the paper's raw-output retest, Table 43).
        The parent jobs of a family whose reference answer is unusable (`ladder check`; the report
        leaves such a family out) are skipped, said before any call, unless ``include_unusable``.
        The milestones the leak rule drops (`Family.leaking`) are in no Stage 0, C2 or C3 prompt unless
        ``keep_leaking`` (to replicate a run that kept them).
        ``dry_run``: plan the jobs and return the calls the run would make after the cache, with their
        estimate, and no run. A Python function as the student is the model python/``name`` at
        ``version`` (`as_endpoint`: its calls keyed by both)."""
        c = configured(ProbeConfig, config, options)
        endpoint = as_endpoint(student, name=name, version=version)
        ladder = self.domain(c.domain)
        default, known = ladder.conditions, ladder.conditions + ladder.optional_conditions
        try:
            chosen = tuple(dict.fromkeys(LADDER.parse(n) for n in c.conditions)) if c.conditions else default
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
        if c.primitive:
            chosen = tuple(dict.fromkeys(chosen + LADDER.optional))
        unknown = [LADDER[n].short for n in chosen if n not in known]
        if unknown:
            raise ExperimentError(f"the {c.domain} ladder has no condition {', '.join(unknown)}; "
                                  f"it has {', '.join(LADDER[n].short for n in known)}")
        job_config = JobConfig(student=endpoint.model, k=c.k, conditions=chosen, stage0=c.stage0, max_tokens=c.max_tokens,
                               temperature=c.temperature, seed=c.seed, use_corrections=c.use_corrections,
                               grader=c.grader, primitive_fallback=c.primitive_fallback, system_prompt=c.system_prompt,
                               keep_leaking=c.keep_leaking)
        donors = await self.domain_families(ladder, c.source)
        families = c.shard.of(donors[:c.limit] if c.pids is None else chosen_families(donors, c.pids, c.source)[:c.limit])
        if (C2P_RANDOM.name in chosen
                and len(donors) - len(without_primitive(donors, job_config.primitive_fallback)) == 1):
            raise ExperimentError(f"C2-primitive-random needs another family with a primitive in '{c.source}', and "
                                  "only one has one: `ladder compile --primitives-only` writes more "
                                  "(or --primitive-fallback)")
        borrowing = [LADDER[n].short for n in chosen if borrows_milestones(n)]
        if borrowing and sum(bool(f.tested(keep_leaking=c.keep_leaking)) for f in donors) < 2:
            raise ExperimentError(f"the controls {', '.join(borrowing)} borrow another family's milestones, and "
                                  f"'{c.source}' has no second family with milestones: import more, or leave them "
                                  "out (--conditions C1,C2,C3)")
        unusable = {f.pid for f in families if ladder.ungradable(f, c.use_corrections)}
        skipped = set() if c.include_unusable else unusable

        def say_skipped() -> None:  # once the endpoint is checked, before any call
            if skipped:
                self._notify(f"{len(skipped)} of the {n_families(len(families))} have an unusable reference answer "
                             "(`ladder check` says why; the report leaves them out): their parent jobs are "
                             "skipped (--include-unusable probes them)")

        jobs = asked_jobs(ladder.plan_jobs(families, job_config, donors), job_config, skipped)
        if not jobs:  # a run of nothing would be recorded as a probe
            raise ExperimentError(*_nothing_to_probe(families, c.source, job_config, skipped))
        if c.dry_run:
            async with await self.client(endpoint) as client:
                say_skipped()
                todo = await uncached_calls(jobs, client=client, store=self.store, temperature=job_config.temperature,
                                            max_tokens=job_config.max_tokens)
            return ProbeEstimate.of(client, todo, jobs=len(jobs), families=len(families), unusable=len(skipped))
        self._grading(ladder)
        failed: list[FailedJob] = []
        # the request-body fields (a grammar, server parameters) change what the student answers: kept as provenance
        extra = {"extra_body": endpoint.extra_body} if endpoint.extra_body else {}
        picked = {"pids": [f.pid for f in families]} if c.pids is not None else {}
        # the prompts' versions too, the student's and the teacher's: a report never pools results made under
        # two versions of one
        async with calling(self.store, endpoint, "probe", {**job_config.__dict__, "source": c.source,
                                                           "families": len(families),
                                                           "prompts": ladder.student_prompts(job_config),
                                                           "teacher_prompts": teacher_prompts(
                                                               [f for f in families if isinstance(f, Family)]),
                                                           **picked,
                                                           **extra},
                           concurrency=CONCURRENCY, notify=self._notify, cluster=self.cluster) as (client, run):
            say_skipped()
            with ladder, (progress or no_progress)(f"probe {job_config.student}", len(jobs), client) as advance:
                def fail(job) -> None:
                    failed.append(job)
                    advance(job)

                await run_probe(ladder, families, job_config, client=client, store=self.store, run_id=run.id,
                                source=c.source, on_done=advance, on_failed=fail, donors=donors, skip_parents=skipped,
                                # in batch mode every job waits in a batch at once
                                workers=len(jobs) if client.batch else None)
            ungraded = await self.store.rollout_count(run_id=run.id, status=GradeStatus.UNGRADED)
            run.incomplete = bool(failed or ungraded)
        return ProbeResult(
            run_id=run.id, families=len(families), usage=client.usage, ungraded=ungraded,
            # families the primitive conditions skip for want of a primitive (docs/primitive.md)
            without_primitive=len(without_primitive(families, job_config.primitive_fallback))
            if set(chosen) & set(LADDER.optional) else 0,
            budget_stop=client.budget_stop, batch_rows_submitted=client.batch_rows_submitted,
            failed_jobs=[JobFailure(pid=j.pid, target=j.target, k=j.k, reason=j.reason) for j in failed],
            endpoint_lost=None if client.lost is None else " ".join(str(client.lost).split()),
            unusable=len(skipped))

    async def benchmark(self, student: str | Endpoint, problems: str | os.PathLike[str],
                        config: BenchmarkConfig | None = None, *, progress: Progress | None = None,
                        **options: Any) -> BenchmarkResult:
        """A plain benchmark probe, the paper's external comparator (Tables 1, 17): each problem of a pool
        file (`construction.pool.read_pool`; ``fields``: its `NAME=COLUMN` specs) asked directly, with no roadmap (C1), K times; ordinary cached
        rollouts, filed under the roadmap set ``benchmark:NAME`` (default name: the file's stem). Returns
        the mean pass@1 and unbiased pass@K over the problems with K graded answers; a problem without a
        reference answer is left out and counted."""
        c = configured(BenchmarkConfig, config, options)
        endpoint, path = as_endpoint(student), Path(problems)
        name = c.name or path.stem
        pool = _pools.read_pool(path, _pools.parse_fields(list(c.fields)))
        asked = [p for p in pool if p.answer.strip()]
        if not asked:
            raise ExperimentError(f"{path}: no problem with a reference answer")
        source = BENCHMARK + name
        for p in asked:
            await self.store.put_family(Family(pid=p.pid, parent_prompt=p.problem, parent_answer=p.answer,
                                               milestones=[], provenance=Provenance(source=source)))
        await self.store.flush()
        probed = await self.probe(endpoint, k=c.k, conditions=(DIRECT,), stage0=False, max_tokens=c.max_tokens,
                                  temperature=c.temperature, grader=c.grader, source=source, progress=progress)
        assert isinstance(probed, ProbeResult)  # not a dry run
        answers = await self.store.answered_by(probed.run_id, endpoint.model)
        complete, pass1, passk = benchmark_scores(answers, c.k)
        return BenchmarkResult(**dict(probed), name=name, k=c.k, problems=len(asked), no_answer=len(pool) - len(asked),
                               complete=complete, pass_at_1=pass1, pass_at_k=passk, max_tokens=c.max_tokens,
                               truncation=truncation(answers, await finish_reasons(self.store, answers)))

    async def regrade(self, student: str, *, source: str = "release", domain: str = "math") -> RegradeResult:
        """Grade every ungraded rollout of a student on one roadmap set again, from its stored response,
        with the grading options of the run that made it; no call is made."""
        store, ladder = self.store, self.domain(domain)
        families = await self.domain_families(ladder, source)
        by_pid = {f.pid: f for f in families}
        rollout_source = ladder.rollout_source(families[0], source)
        todo = [r for r in await store.rollouts(student=student, source=rollout_source)
                if not r.verdict.graded and r.pid in by_pid]
        # the grading options of the run that made each rollout
        configs = {rid: JobConfig.stored(stored.config if (stored := await store.get_run(rid)) else None, student)
                   for rid in {r.run_id for r in todo}}
        async with recorded(store, "regrade", {"student": student, "source": source, "rollouts": len(todo)}) as run:
            with self._grading(ladder):
                async def grade(r: Rollout) -> Verdict:
                    return await ladder.grade(Job(by_pid[r.pid], r.target, r.k, []), r.response, configs[r.run_id])

                done = await regrade_rollouts(todo, grade, store)
            left = sum(not r.verdict.graded for r in done)
            run.incomplete = left > 0
        return RegradeResult(run_id=run.id, regraded=len(done) - left, still_ungraded=left,
                             accepted=sum(r.verdict.accepted for r in done if r.verdict.graded))
