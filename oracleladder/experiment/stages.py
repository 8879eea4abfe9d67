"""`Experiment`: one experiment's store, read (`Reader`) and written by the stages the `ladder`
commands run: import, compile, probe, screen, regrade, the judge audit, the rubric review, the batches.

Each stage that calls a model runs inside one lifecycle (`run.calling`: the endpoint's client, the
run recorded around the work, the client closed) and returns a typed result (`results.py`)."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .. import workers
from .._lazy import lazy_module
from ..audit.format import finish_reasons, truncation
from ..audit.judge import ask_judge, draw, key_path, paired, write_sheet
from ..audit.review import ask_review, prompt_version as review_prompt, review_messages
from ..clients import Client
from ..clients.batch import CREATING, ENDED, make_batch_api
from ..clients.errors import endpoint_failure
from ..clients.function import ModelFunction
from ..cluster import Cluster
from ..compiler.loop import Compiler
from ..compiler.workers import BUDGET_CHECK
from ..construction.screen import DIRECT, KEPT, RULES, judge_direct, raw_source, screen as screen_families
from ..domains.math import MathDomain, collect_results
from ..domains.math.integrate_compile import IntegrateDomain
from ..domains.math.primitive import without_primitive
from ..domains.math.primitive_compile import PrimitiveDomain
from ..domains.math.prompts import borrows_milestones
from ..ladder import WHOLE, CompileDomain, Job, ProbeConfig, Settings, Shard
from ..ladder.contract import HasPid
from ..ladder.outcomes import Gap
from ..probe.runner import asked_jobs, regrade as regrade_rollouts, run_jobs, run_probe, uncached_calls
from ..prompts import load as load_prompt
from ..report.palette import n_families
from ..report.tables import known_gap, review_row
from ..runtime import gather_or_cancel
from ..schemas import (
    LADDER,
    CheckResult,
    Family,
    Provenance,
    Rollout,
    Verdict,
)
from ..schemas.conditions import C2P_RANDOM
from ..schemas.jsonl import OnDuplicate
from ..schemas.types import GradeStatus
from ..store import DEFAULT_STORE, BatchRecord, FailedJob, Review, ScreenVerdict, Store
from ..verify import GRADERS
from ..workers import WorkerPool
from . import panels as _panels
from .endpoint import CONCURRENCY, JUDGE_CONCURRENCY, TEACHER_CONCURRENCY, Endpoint, as_endpoint, endpoint_client
from .errors import Arg, ExperimentError
from .files import apply_corrections, load_families, with_leaks_left_out
from .prim import PrimStages
from .reader import BENCHMARK, Reader, benchmark_scores
from .results import (
    BenchmarkResult,
    CompileEstimate,
    CompileResult,
    ImportResult,
    IntegrateResult,
    JobFailure,
    JudgeAuditResult,
    PrimitivesResult,
    ProbeEstimate,
    ProbeResult,
    RegradeResult,
    ReviewAuditResult,
    ScreenResult,
)
from .run import Progress, calling, no_progress, recorded
from .selection import Choice

if TYPE_CHECKING:
    from ..construction import pool as _pools
else:  # pyarrow behind it: loaded by a benchmark probe, not by `ladder --help`
    _pools = lazy_module("oracleladder.construction.pool")

GRANULARITIES = ("coarse", "default", "fine")

D = TypeVar("D", bound=CompileDomain)  # a domain, handed the run's worker pool
F = TypeVar("F", bound=HasPid)  # a family of any domain


def chosen_families(families: Sequence[F], pids: Sequence[str], source: str) -> list[F]:
    """The families of ``pids``, in the set's order; a pid the set does not hold is refused."""
    have = {f.pid for f in families}
    unknown = [p for p in dict.fromkeys(pids) if p not in have]
    if unknown:
        raise ExperimentError(f"roadmap set '{source}' holds no family {', '.join(unknown)}")
    wanted = set(pids)
    return [f for f in families if f.pid in wanted]


def _nothing_to_probe(families: Sequence[HasPid], source: str, config: ProbeConfig,
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


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.absolute().parent, os.W_OK)


class Experiment(PrimStages, Reader):
    """One experiment's store, and the verifier pool the commands grade with; an async context manager.

    ``readonly``: None opens an existing store read-only where it cannot be written, else for writing
    (a missing file is created). ``notify``: called with one line for what a run learns on its own (a
    server's slot count or served model name). ``workers``: the verifier pool's size (default: the
    CPU count). ``cluster``: a Ray cluster (`oracleladder.cluster.Cluster`) whose workers make the
    calls and grade, started with the experiment and stopped with it; the store is written here only."""

    def __init__(self, store_path: str | os.PathLike[str] = DEFAULT_STORE, *, readonly: bool | None = None,
                 notify: Callable[[str], None] | None = None, workers: int | None = None,
                 cluster: Cluster | None = None) -> None:
        super().__init__()
        self.path = Path(store_path)
        self._readonly = readonly
        self._notify = notify or (lambda _: None)
        self._workers = workers
        self._pool: WorkerPool | None = None
        self.cluster = cluster

    async def __aenter__(self) -> Experiment:
        readonly = self._readonly
        if readonly is None:
            readonly = self.path.exists() and not writable(self.path)
        self._store = await Store.open(self.path, readonly=readonly)
        if self.cluster is not None:
            try:
                await asyncio.to_thread(self.cluster.start)  # seconds: Ray's start, each worker up
            except BaseException:
                await self._store.close()
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._pool is not None:
                self._pool.close()
            if self.cluster is not None:
                self.cluster.stop()
        finally:
            if self._store is not None:
                await self._store.close()

    @property
    def pool(self) -> WorkerPool:
        """The worker pool (grading, a plan's checks), started on first use and closed with the experiment;
        on a cluster, its workers' pools."""
        if self._pool is None:
            # read when used: a test may stand one in; a cluster's pool takes a WorkerPool's calls
            self._pool = self.cluster.pool if self.cluster is not None else workers.WorkerPool(self._workers)  # type: ignore[assignment]
        return self._pool

    def _grading(self, domain: D) -> D:
        """``domain``, for a run that grades or checks in worker processes: it runs in the experiment's
        pool, not in one of its own per run."""
        if domain.uses_pool and domain.pool is None:
            domain.pool = self.pool
        return domain

    async def client(self, endpoint: str | Endpoint, *, default_concurrency: int = CONCURRENCY) -> Client:
        """A client of ``endpoint`` caching in the store (endpoint.endpoint_client); the caller closes it."""
        return await endpoint_client(as_endpoint(endpoint), self.store, default_concurrency=default_concurrency,
                                     notify=self._notify, cluster=self.cluster)

    async def import_families(self, path: str | os.PathLike[str], *, source: str = "release",
                              on_duplicate: OnDuplicate = "error",
                              corrections: str | os.PathLike[str] | None = None) -> ImportResult:
        """Import released-format families, filed under ``source``, with the release's ``corrections``
        merged into them (`files.apply_corrections`), and the leak rule applied (`files.with_leaks_left_out`:
        the milestones that leak left out, each found listed; a leak refuses no family). A correction that
        does not apply imports nothing."""
        families = load_families(path, on_duplicate)
        applied = [] if corrections is None else apply_corrections(families, corrections)
        shown: dict[str, list[CheckResult]] = {}
        for family in families:
            family.provenance.source = source
            if leaks := with_leaks_left_out(family):
                shown[family.pid] = leaks
            await self.store.put_family(family)
        return ImportResult(families=len(families), corrections=applied, shown_leaks=shown,
                            leaking={f.pid: f.leaking for f in families if f.leaking})

    async def import_panels(self, paths: Sequence[str | os.PathLike[str]], *, source: str = "release",
                            student: str | None = None, max_tokens: int | None = None,
                            temperature: float | None = None, grader: str | None = None,
                            ) -> tuple[dict[str, int], int]:
        """Import the release's panel records (`panels`: per model, condition or milestone and family,
        n_correct of k) on the families of ``source``: each model a student with no rollouts, its
        results filed as an imported panel at the settings given (None: not stated). Returns the
        records imported per student, and how many were left out (on families not in the set)."""
        if grader is not None and grader not in GRADERS:
            raise ExperimentError(f"unknown grader {grader!r}; known: {', '.join(GRADERS)}")
        families = await self.roadmap_set(source)
        return await _panels.import_panels(
            self.store, paths, families, families[0].provenance.roadmap_set, student=student,
            settings={"max_tokens": max_tokens, "temperature": temperature, "grader": grader})

    # ------------------------------------------------------------------ compile

    async def compile(self, problems: str | os.PathLike[str], teacher: str | Endpoint | ModelFunction, *,
                      name: str | None = None, version: str | None = None, granularity: str = "default", domain: str = "math", max_attempts: int = 3,
                      max_tokens: int = 4096, independent_solve: bool = True, on_duplicate: OnDuplicate = "error",
                      fields: Sequence[str] | None = None, null_values: Sequence[str] = (),
                      encoding: str | None = None, screened: str | None = None, teacher_prompt: str = "toolkit",
                      dry_run: bool = False, shard: Shard = WHOLE,
                      progress: Progress | None = None) -> CompileResult | CompileEstimate:
        """Compile milestone families with a teacher: validators, retry on error, every attempt stored.
        ``null_values``: the pool's cell texts that mean "missing"; ``encoding``: a CSV pool's, when it
        is not UTF-8; ``screened``: a raw screen's set (`screen_pool`), whose survivors alone are compiled;
        ``teacher_prompt``: the toolkit's, or ``paper`` (Appendix U as published; math); ``shard``: only
        the problems of that shard (`ladder.shards`). With ``dry_run``, the calls it would make and their
        estimate, and no run. A Python function as the teacher is the model python/``name`` at ``version``
        (`as_endpoint`)."""
        if granularity not in GRANULARITIES:
            raise ExperimentError(f"unknown granularity '{granularity}'; known: {', '.join(GRANULARITIES)}")
        ladder = self.domain(domain, Settings(granularity=granularity, independent_solve=independent_solve,
                                              fields=tuple(fields or ()), null_values=tuple(null_values),
                                              encoding=encoding, teacher_prompt=teacher_prompt))
        endpoint, store = as_endpoint(teacher, name=name, version=version), self.store
        if domain == "math":  # a teacher's set is compiled under one prompt: the other's would replace it family by family
            stored = {f.provenance.teacher_prompt or "toolkit"
                      for f in await store.families(source=endpoint.model, granularity=granularity)}
            if stored - {teacher_prompt}:
                raise ExperimentError(f"{store.path} holds families of {endpoint.model} compiled with the "
                                      f"{', '.join(sorted(stored))} teacher prompt; compile with --teacher-prompt "
                                      f"{teacher_prompt} into another --store")
        problems_path = Path(problems)
        pool = ladder.read_problems(problems_path, on_duplicate)
        if not pool:
            raise ExperimentError(f"{problems_path}: no problems to compile (an empty pool)")
        if screened is not None:
            pool = await self._survivors(screened, domain, pool)
        pool = shard.of(pool)
        if dry_run:  # a problem compiled by this teacher, or skipped for its reference answer, sends nothing
            usable = [p for p in pool if ladder.unusable(p) is None]
            async with await self.client(endpoint, default_concurrency=TEACHER_CONCURRENCY) as client:
                todo = [p for p in usable if not any(
                    a.passed for a in await store.compile_attempts(p.pid, client.name, ladder.granularity))]
                firsts = [client.request(ladder.teacher_messages(p)[0], temperature=0.0, max_tokens=max_tokens)
                          for p in todo]
            return CompileEstimate.of(client, firsts, problems=len(pool), unusable=len(pool) - len(usable))
        self._grading(ladder)
        config = {"teacher": endpoint.model, "granularity": granularity, "max_attempts": max_attempts,
                  "problems": str(problems_path), "teacher_prompt": teacher_prompt}
        async with calling(store, endpoint, "compile", config, concurrency=TEACHER_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            with ladder, (progress or no_progress)(f"compile with {endpoint.model}", len(pool), client) as advance:
                compiler = Compiler(client, store, ladder, max_attempts=max_attempts, max_tokens=max_tokens)
                # in batch mode every problem is under way at once: its first attempts go in one batch
                outcomes = await compiler.compile_all(pool, on_done=advance,
                                                      concurrency=len(pool) if client.batch else None)
            run.incomplete = any(o.infrastructure_failure for o in outcomes)
        failed = {o.pid: [f"{e.check}: {e.reason}" for e in o.errors] for o in outcomes
                  if not o.ok and not o.infrastructure_failure}
        infra_failed = {o.pid: f"{o.errors[0].check} failure: {o.errors[0].reason}"
                        for o in outcomes if o.infrastructure_failure and o.errors[0].check != BUDGET_CHECK}
        # an endpoint that takes no request at all (no connection, a refused key, a wrong URL) is said in one
        # line; other failures are the problems' own, counted above, and a rerun retries them
        every_call_failed = (client.usage.successes == 0 and client.last_error is not None
                             and endpoint_failure(client.last_error))
        return CompileResult(
            all_failed=endpoint.explain(client.last_error) if every_call_failed else None,
            run_id=run.id, compiled=sum(o.ok for o in outcomes), failed=len(failed),
            infrastructure_failures=len(infra_failed),
            attempts_per_family=dict(sorted(Counter(o.attempts for o in outcomes if o.ok).items())),
            budget_raised=sum(o.budget_raised for o in outcomes),
            failed_checks=dict(Counter(e.split(":")[0] for errs in failed.values() for e in errs)),
            failed_why=failed, infrastructure_failed_why=infra_failed, usage=client.usage,
            budget_stop=client.budget_stop, batch_rows_submitted=client.batch_rows_submitted,
            not_compiled_for_budget=sum(o.infrastructure_failure for o in outcomes) - len(infra_failed))

    async def _survivors(self, set_name: str, domain: str, pool: list) -> list:
        """The problems of ``pool`` kept by the raw screen ``set_name`` of the ``domain`` pool; refused when
        the set is not such a screen, or keeps none of them."""
        verdicts = await self.set_verdicts(set_name)
        if verdicts[0].source != raw_source(domain):
            raise ExperimentError(f"set '{set_name}' is a screen of {verdicts[0].source}, not of a raw {domain} pool "
                                  f"(`ladder screen POOL --domain {domain} --set {set_name}`)")
        kept = {v.pid for v in verdicts if v.verdict == KEPT}
        survivors = [p for p in pool if p.pid in kept]
        if not survivors:
            raise ExperimentError(f"none of the pool's {len(pool)} problems survived the screen of set '{set_name}' "
                                  f"({len(kept)} kept there): nothing to compile")
        self._notify(f"compiling the {len(survivors)} of {len(pool)} problems that survived the screen of set "
                     f"'{set_name}' (the others are not sent to the teacher)")
        return survivors

    async def compile_primitives(self, teacher: str | Endpoint, *, source: str = "release", max_attempts: int = 3,
                                 max_tokens: int = 4096, progress: Progress | None = None) -> PrimitivesResult:
        """A primitive (the key idea, docs/primitive.md) for each family of the math roadmap set
        ``source`` that has none, from its problem and roadmap; every attempt stored."""
        families = await self.roadmap_set(source)
        todo = [f for f in families if f.primitive is None]
        return PrimitivesResult(**await self._fill(teacher, source, todo, PrimitiveDomain(), "primitives",
                                                   max_attempts, max_tokens, progress),
                                families=len(families), had_primitive=len(families) - len(todo))

    async def compile_integrate(self, teacher: str | Endpoint, *, source: str = "release", max_attempts: int = 3,
                                max_tokens: int = 4096, progress: Progress | None = None) -> IntegrateResult:
        """The INTEGRATE step (Appendix B: released families have none) for each family of the math
        roadmap set ``source`` that has none, from its problem and roadmap; its gold must equal the
        reference answer by the verifier; every attempt stored."""
        families = await self.roadmap_set(source)
        todo = [f for f in families if f.integrate is None]
        return IntegrateResult(**await self._fill(teacher, source, todo, IntegrateDomain(), "integrate",
                                                  max_attempts, max_tokens, progress),
                               families=len(families), had_integrate=len(families) - len(todo))

    async def _fill(self, teacher: str | Endpoint, source: str, todo: list[Family], domain: CompileDomain,
                    what: str, max_attempts: int, max_tokens: int, progress: Progress | None) -> dict:
        """One part (``what``) of existing families written by a teacher in the compile loop: the run's
        figures, as the result's fields."""
        endpoint = as_endpoint(teacher)
        config = {"teacher": endpoint.model, "source": source, "max_attempts": max_attempts, "families": len(todo)}
        async with calling(self.store, endpoint, f"compile-{what}", config, concurrency=TEACHER_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            with (progress or no_progress)(f"{what} with {endpoint.model}", len(todo), client) as advance:
                compiler = Compiler(client, self.store, self._grading(domain), max_attempts=max_attempts,
                                    max_tokens=max_tokens)
                outcomes = await compiler.compile_all(todo, on_done=advance)
            run.incomplete = any(o.infrastructure_failure for o in outcomes)
        return dict(
            run_id=run.id, compiled=sum(o.ok for o in outcomes),
            failed_why={o.pid: f"{o.errors[0].check}: {o.errors[0].reason}" for o in outcomes if not o.ok and o.errors},
            infrastructure_failures=sum(o.infrastructure_failure for o in outcomes), usage=client.usage,
            budget_stop=client.budget_stop)

    # ------------------------------------------------------------------ probe

    async def probe(self, student: str | Endpoint | ModelFunction, *, name: str | None = None,
                    version: str | None = None, k: int = 8, conditions: Sequence[str] | None = None,
                    stage0: bool = True, max_tokens: int = 4096, temperature: float = 1.0, seed: int = 0,
                    use_corrections: bool = False, grader: str = "strict", source: str = "release",
                    limit: int | None = None, domain: str = "math", primitive: bool = False,
                    primitive_fallback: bool = False, include_unusable: bool = False, dry_run: bool = False,
                    system_prompt: bool = True, pids: Sequence[str] | None = None, keep_leaking: bool = False,
                    shard: Shard = WHOLE, progress: Progress | None = None) -> ProbeResult | ProbeEstimate:
        """Probe a student on one roadmap set: Stage 0 and the parent ladder with its controls (code:
        the helper test and C1-C3). Cached and resumable. ``conditions``: names (C1 or C1_direct, ...),
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
        endpoint = as_endpoint(student, name=name, version=version)
        ladder = self.domain(domain)
        default, known = ladder.conditions, ladder.conditions + ladder.optional_conditions
        try:
            chosen = tuple(dict.fromkeys(LADDER.parse(c) for c in conditions)) if conditions else default
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
        if primitive:
            chosen = tuple(dict.fromkeys(chosen + LADDER.optional))
        unknown = [LADDER[c].short for c in chosen if c not in known]
        if unknown:
            raise ExperimentError(f"the {domain} ladder has no condition {', '.join(unknown)}; "
                                  f"it has {', '.join(LADDER[c].short for c in known)}")
        try:
            config = ProbeConfig(student=endpoint.model, k=k, conditions=chosen, stage0=stage0, max_tokens=max_tokens,
                                 temperature=temperature, seed=seed, use_corrections=use_corrections,
                                 grader=grader, primitive_fallback=primitive_fallback, system_prompt=system_prompt,
                                 keep_leaking=keep_leaking)
        except ValueError as exc:  # an unknown grader
            raise ExperimentError(str(exc)) from None
        donors = await self.domain_families(ladder, source)
        families = shard.of(donors[:limit] if pids is None else chosen_families(donors, pids, source)[:limit])
        if (C2P_RANDOM.name in config.conditions
                and len(donors) - len(without_primitive(donors, config.primitive_fallback)) == 1):
            raise ExperimentError(f"C2-primitive-random needs another family with a primitive in '{source}', and "
                                  "only one has one: `ladder compile --primitives-only` writes more "
                                  "(or --primitive-fallback)")
        borrowing = [LADDER[c].short for c in config.conditions if borrows_milestones(c)]
        if borrowing and sum(bool(f.tested(keep_leaking=keep_leaking)) for f in donors) < 2:
            raise ExperimentError(f"the controls {', '.join(borrowing)} borrow another family's milestones, and "
                                  f"'{source}' has no second family with milestones: import more, or leave them "
                                  "out (--conditions C1,C2,C3)")
        unusable = {f.pid for f in families if ladder.ungradable(f, use_corrections)}
        skipped = set() if include_unusable else unusable

        def say_skipped() -> None:  # once the endpoint is checked, before any call
            if skipped:
                self._notify(f"{len(skipped)} of the {n_families(len(families))} have an unusable reference answer "
                             "(`ladder check` says why; the report leaves them out): their parent jobs are "
                             "skipped (--include-unusable probes them)")

        jobs = asked_jobs(ladder.plan_jobs(families, config, donors), config, skipped)
        if not jobs:  # a run of nothing would be recorded as a probe
            raise ExperimentError(*_nothing_to_probe(families, source, config, skipped))
        if dry_run:
            async with await self.client(endpoint) as client:
                say_skipped()
                todo = await uncached_calls(jobs, client=client, store=self.store, temperature=config.temperature,
                                            max_tokens=config.max_tokens)
            return ProbeEstimate.of(client, todo, jobs=len(jobs), families=len(families), unusable=len(skipped))
        self._grading(ladder)
        failed: list[FailedJob] = []
        # the request-body fields (a grammar, server parameters) change what the student answers: kept as provenance
        extra = {"extra_body": endpoint.extra_body} if endpoint.extra_body else {}
        picked = {"pids": [f.pid for f in families]} if pids is not None else {}
        # the prompts' versions too: a report never pools results made under two versions of one
        async with calling(self.store, endpoint, "probe", {**config.__dict__, "source": source,
                                                           "families": len(families),
                                                           "prompts": ladder.student_prompts(config), **picked,
                                                           **extra},
                           concurrency=CONCURRENCY, notify=self._notify, cluster=self.cluster) as (client, run):
            say_skipped()
            with ladder, (progress or no_progress)(f"probe {config.student}", len(jobs), client) as advance:
                def fail(job) -> None:
                    failed.append(job)
                    advance(job)

                await run_probe(ladder, families, config, client=client, store=self.store, run_id=run.id,
                                source=source, on_done=advance, on_failed=fail, donors=donors, skip_parents=skipped,
                                # in batch mode every job waits in a batch at once
                                workers=len(jobs) if client.batch else None)
            ungraded = await self.store.rollout_count(run_id=run.id, status=GradeStatus.UNGRADED)
            run.incomplete = bool(failed or ungraded)
        return ProbeResult(
            run_id=run.id, families=len(families), usage=client.usage, ungraded=ungraded,
            # families the primitive conditions skip for want of a primitive (docs/primitive.md)
            without_primitive=len(without_primitive(families, config.primitive_fallback))
            if set(config.conditions) & set(LADDER.optional) else 0,
            budget_stop=client.budget_stop, batch_rows_submitted=client.batch_rows_submitted,
            failed_jobs=[JobFailure(pid=j.pid, target=j.target, k=j.k, reason=j.reason) for j in failed],
            endpoint_lost=None if client.lost is None else " ".join(str(client.lost).split()),
            unusable=len(skipped))

    # ------------------------------------------------------------------ construction

    async def screen(self, anchor: str | Endpoint, *, source: str = "release", set_name: str | None = None,
                     k: int = 8, max_tokens: int = 4096, rule: str = "default", temperature: float = 1.0,
                     grader: str = "strict", shard: Shard = WHOLE, progress: Progress | None = None) -> ScreenResult:
        """Anchor screen and structural filter (Section 3): probe the anchor (C1 and Stage 0: ordinary
        cached rollouts) on a roadmap set, then store each family's verdict in the set (default name:
        the anchor); ``shard``: only the families of that shard. Returns the probe's result with the
        set and its verdicts counted."""
        if rule not in RULES:
            raise ExperimentError(f"unknown rule '{rule}'; known: {', '.join(RULES)}")
        endpoint = as_endpoint(anchor)
        set_name = set_name or endpoint.model
        probed = await self.probe(endpoint, k=k, conditions=(DIRECT,), stage0=True, max_tokens=max_tokens,
                                  temperature=temperature, grader=grader, source=source, shard=shard,
                                  progress=progress)
        assert isinstance(probed, ProbeResult)  # not a dry run
        families = shard.of(await self.roadmap_set(source))
        rollouts = await self.store.answered_by(probed.run_id, endpoint.model)
        verdicts = screen_families(families, collect_results(families, rollouts), set_name=set_name,
                                   anchor=endpoint.model, rule=rule, k=k, max_tokens=max_tokens, run_id=probed.run_id)
        for verdict in verdicts:
            await self.store.put_screen_verdict(verdict, wait=False)
        await self.store.flush()
        return ScreenResult(**dict(probed), set_name=set_name, verdicts=dict(Counter(v.verdict for v in verdicts)))

    async def screen_pool(self, problems: str | os.PathLike[str], anchor: str | Endpoint, *, domain: str = "math",
                          set_name: str | None = None, k: int = 8, max_tokens: int = 4096, rule: str = "direct-only",
                          temperature: float = 1.0, grader: str = "strict", fields: Sequence[str] = (),
                          null_values: Sequence[str] = (), encoding: str | None = None,
                          on_duplicate: OnDuplicate = "error", shard: Shard = WHOLE,
                          progress: Progress | None = None) -> ScreenResult:
        """The raw screen (Appendix N, the code pilot): each problem of a pool asked directly K times by the
        anchor, before any teacher call, graded by the domain's grader; a problem it solves once is dropped.
        Ordinary cached rollouts (filed under ``pool:DOMAIN``); each problem's verdict stored in the set
        (default name: the anchor), which `compile(screened=SET)` compiles the survivors of. ``shard``: only
        the problems of that shard (`ladder.shards`)."""
        if rule != "direct-only":
            raise ExperimentError(f"the {rule} rule needs roadmaps (the milestone test): a raw pool is screened "
                                  "with --rule direct-only, or compile it and screen the set")
        endpoint, path = as_endpoint(anchor), Path(problems)
        set_name = set_name or endpoint.model
        ladder = self.domain(domain, Settings(fields=tuple(fields), null_values=tuple(null_values), encoding=encoding))
        pool = shard.of(ladder.read_problems(path, on_duplicate))
        if not pool:
            raise ExperimentError(f"{path}: no problems to screen (an empty pool"
                                  + ("" if shard == WHOLE else f", or none in shard {shard}") + ")")
        try:
            config = ProbeConfig(student=endpoint.model, k=k, conditions=(DIRECT,), stage0=False,
                                 max_tokens=max_tokens, temperature=temperature, grader=grader)
        except ValueError as exc:  # an unknown grader
            raise ExperimentError(str(exc)) from None
        unusable = {p.pid: why.reason for p in pool if (why := ladder.unusable(p)) is not None}
        jobs = [Job(p, DIRECT, i, ladder.direct_messages(p)) for p in pool if p.pid not in unusable for i in range(k)]
        source, failed = raw_source(domain), []
        self._grading(ladder)
        async with calling(self.store, endpoint, "screen-pool", {**config.__dict__, "problems": str(path),
                                                                 "domain": domain, "set": set_name},
                           concurrency=CONCURRENCY, notify=self._notify, cluster=self.cluster) as (client, run):
            for problem in pool:  # the funnel's candidates
                await ladder.store_problem(self.store, problem)
            with ladder, (progress or no_progress)(f"screen {endpoint.model}", len(jobs), client) as advance:
                def fail(job: FailedJob) -> None:
                    failed.append(job)
                    advance(job)

                await run_jobs(jobs, lambda job, text: ladder.grade_direct(job.family, text, config), client=client,
                               store=self.store, run_id=run.id, student=endpoint.model, source=lambda _: source,
                               temperature=temperature, max_tokens=max_tokens, on_done=advance, on_failed=fail,
                               workers=len(jobs) if client.batch else None)  # in batch mode every job waits at once
            ungraded = await self.store.rollout_count(run_id=run.id, status=GradeStatus.UNGRADED)
            run.incomplete = bool(failed or ungraded)
        graded: dict[str, list[bool]] = {p.pid: [] for p in pool}
        for r in await self.store.answered_by(run.id, endpoint.model):
            if r.verdict.graded:
                graded[r.pid].append(r.verdict.accepted)
        verdicts: Counter[str] = Counter()
        for problem in pool:
            verdict, reason, direct = judge_direct(unusable.get(problem.pid), graded[problem.pid], k, endpoint.model)
            verdicts[verdict] += 1
            await self.store.put_screen_verdict(ScreenVerdict(
                set_name=set_name, pid=problem.pid, source=source, anchor=endpoint.model, rule=rule, k=k,
                max_tokens=max_tokens, verdict=verdict, reason=reason, direct=direct, stage0={}, run_id=run.id),
                wait=False)
        await self.store.flush()
        return ScreenResult(
            run_id=run.id, families=len(pool), usage=client.usage, ungraded=ungraded, without_primitive=0,
            budget_stop=client.budget_stop, batch_rows_submitted=client.batch_rows_submitted,
            failed_jobs=[JobFailure(pid=j.pid, target=j.target, k=j.k, reason=j.reason) for j in failed],
            endpoint_lost=None if client.lost is None else " ".join(str(client.lost).split()),
            unusable=len(unusable), set_name=set_name, verdicts=dict(verdicts))

    async def benchmark(self, student: str | Endpoint, problems: str | os.PathLike[str], *, name: str | None = None,
                        k: int = 8, max_tokens: int = 4096, temperature: float = 1.0, grader: str = "strict",
                        fields: Sequence[str] = (), progress: Progress | None = None) -> BenchmarkResult:
        """A plain benchmark probe, the paper's external comparator (Tables 1, 17): each problem of a pool
        file (`construction.pool.read_pool`; ``fields``: its `NAME=COLUMN` specs) asked directly, with no roadmap (C1), K times; ordinary cached
        rollouts, filed under the roadmap set ``benchmark:NAME`` (default name: the file's stem). Returns
        the mean pass@1 and unbiased pass@K over the problems with K graded answers; a problem without a
        reference answer is left out and counted."""
        endpoint, path = as_endpoint(student), Path(problems)
        name = name or path.stem
        pool = _pools.read_pool(path, _pools.parse_fields(list(fields)))
        asked = [p for p in pool if p.answer.strip()]
        if not asked:
            raise ExperimentError(f"{path}: no problem with a reference answer")
        source = BENCHMARK + name
        for p in asked:
            await self.store.put_family(Family(pid=p.pid, parent_prompt=p.problem, parent_answer=p.answer,
                                               milestones=[], provenance=Provenance(source=source)))
        await self.store.flush()
        probed = await self.probe(endpoint, k=k, conditions=(DIRECT,), stage0=False, max_tokens=max_tokens,
                                  temperature=temperature, grader=grader, source=source, progress=progress)
        assert isinstance(probed, ProbeResult)  # not a dry run
        answers = await self.store.answered_by(probed.run_id, endpoint.model)
        complete, pass1, passk = benchmark_scores(answers, k)
        return BenchmarkResult(**dict(probed), name=name, k=k, problems=len(asked), no_answer=len(pool) - len(asked),
                               complete=complete, pass_at_1=pass1, pass_at_k=passk, max_tokens=max_tokens,
                               truncation=truncation(answers, await finish_reasons(self.store, answers)))

    # ------------------------------------------------------------------ grading and audits

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
        configs = {rid: ProbeConfig.stored(run.config if (run := await store.get_run(rid)) else None, student)
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

    async def judge_audit(self, judge: str | Endpoint, student: str, sheet: str | os.PathLike[str], *,
                          source: str = "release", n: int = 40, seed: int = 0,
                          max_tokens: int = 4096, choice: Choice = Choice()) -> JudgeAuditResult:
        """Judge audit of the grader in both directions (paper Appendix V): a seeded sample of ``n`` of the
        student's graded rollouts on a math roadmap set at one setting (``choice``: its own ``max_tokens``
        is the judge's), stratified by the verifier's verdict (accepted, or its rejection reason), graded
        by the LLM ``judge``: the paired grades (Tables 45, 46: ``paired``), and the rejected cases it
        accepts in the grader-blind CSV ``sheet`` (its key beside it, audit.judge.key_path), which is
        never overwritten. ``failed`` counts the judge calls that failed for good (a rerun asks them
        again)."""
        sheet = Path(sheet)
        if sheet.exists():  # it may hold a person's labels
            raise ExperimentError(f"{sheet} exists; a sheet is never overwritten: give another ", Arg("sheet"))
        endpoint, store, domain = as_endpoint(judge), self.store, MathDomain()
        families = await self.roadmap_set(source)
        by_pid = {f.pid: f for f in families}
        [picked] = await self.picked(student, source=source, choice=choice)
        rollouts = [r for r in picked.rollouts if r.pid in by_pid]
        sizes, sample = draw(rollouts, n, seed)
        if not sample:
            raise ExperimentError(f"{store.path} holds no graded rollouts of student '{student}' on roadmap set "
                                  f"'{source}'")
        meta = {"judge": endpoint.model, "prompt": f"judge@{load_prompt('judge').version}", "student": student,
                "source": source, "n": n, "max_tokens": max_tokens, "graded": sum(r.verdict.graded for r in rollouts)}
        async with calling(store, endpoint, "audit-judge", meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            verdicts = await ask_judge(client, domain, by_pid, sample, max_tokens)
            run.incomplete = any(v == "failed" for v, _ in verdicts)
        key = write_sheet(sheet, key_path(sheet), domain, by_pid, sizes, sample, verdicts, meta, seed)
        return JudgeAuditResult(run_id=run.id, sampled=len(sample), judge_accepts=len(key["cases"]),
                                paired=paired(key),
                                failed=sum(v == "failed" for v, _ in verdicts),
                                unreadable=sum(v == "unreadable" for v, _ in verdicts), usage=client.usage,
                                batch_rows_submitted=client.batch_rows_submitted)

    async def review_audit(self, reviewer: str | Endpoint, students: Sequence[str], *, source: str = "release",
                           threshold: int = 1, max_tokens: int = 4096, choice: Choice = Choice()) -> ReviewAuditResult:
        """The automated rubric review (paper Appendix S.1, Table 42): the LLM ``reviewer`` labels each distinct
        composition-gap family (strict milestone test, ``threshold`` correct of K) of the students at one setting
        (``choice``) on a math roadmap set once, reading the first student's attempts that has it in the gap, and
        the label is stored for every student that has it there (the paper's 253 families carried to six models;
        a later review of a student's family replaces it); an unreadable reply as unreviewed, a call that failed
        for good not at all (a rerun asks it again). Returns the counts and Table 42 of the students."""
        endpoint, store, domain = as_endpoint(reviewer), self.store, MathDomain()
        families = await self.roadmap_set(source)
        by_pid = {f.pid: f for f in families}
        results: dict[str, list] = {}
        todo: dict[str, tuple[Family, list[Rollout], list[str]]] = {}  # pid -> what is asked, the students it labels
        for student in dict.fromkeys(students):
            [picked] = await self.picked(student, source=source, choice=replace(choice, by_run=False))
            results[student] = [r for r in self._collected(domain, families, picked, False)
                                if not domain.ungradable(by_pid[r.pid])]
            gap = {r.pid for r in results[student] if known_gap(r, threshold) is Gap.COMPOSITION}
            rollouts: dict[str, list[Rollout]] = {}
            for r in picked.rollouts:
                rollouts.setdefault(r.pid, []).append(r)
            for pid in sorted(gap):
                todo.setdefault(pid, (by_pid[pid], rollouts.get(pid, []), []))[2].append(student)
        if not todo:
            raise ExperimentError(f"no composition-gap family of {', '.join(results)} on roadmap set '{source}' "
                                  "(it needs Stage 0 and C1-C3 results)")
        meta = {"reviewer": endpoint.model, "prompt": review_prompt(), "students": list(results), "source": source,
                "threshold": threshold, "max_tokens": max_tokens, "families": len(todo)}
        async with calling(store, endpoint, "audit-review", meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            answers = await gather_or_cancel(*(ask_review(client, review_messages(f, rolls), max_tokens)
                                               for f, rolls, _ in todo.values()))
            for (f, _, labels), a in zip(todo.values(), answers):
                for student in labels if not a.failed else []:
                    await store.put_review(Review(student=student, source=source, pid=f.pid, reviewer=endpoint.model,
                                                  prompt=meta["prompt"], label=a.label, reason=a.reason,
                                                  run_id=run.id), wait=False)
            await store.flush()
            run.incomplete = any(a.failed for a in answers)
        table = {s: review_row(fams, {r.pid: r.label for r in await store.reviews(s, source)}, threshold)
                 for s, fams in results.items()}
        return ReviewAuditResult(run_id=run.id, families=len(todo), labeled=sum(a.label is not None for a in answers),
                                 unreviewed=sum(a.label is None and not a.failed for a in answers),
                                 failed=sum(a.failed for a in answers), usage=client.usage,
                                 batch_rows_submitted=client.batch_rows_submitted, table=table)

    async def batches(self, *, cancel: bool = False,
                      api_key_env: str | None = None) -> tuple[list[BatchRecord], list[str]]:
        """The store's provider batches (``Endpoint.batch``), oldest first, as of their last poll; with
        ``cancel``, those in flight cancelled first (their states as the provider then says; an intent
        whose create reply was lost has no id to cancel until a run looks it up). Returns them and the
        ids cancelled."""
        store = self.store
        cancelled: list[str] = []
        records = await store.batches()
        for b in records if cancel else []:
            if b.state in ENDED or b.state == CREATING:
                continue
            api = make_batch_api(b.provider, base_url=b.endpoint, api_key_env=api_key_env)
            try:
                await api.cancel(b.id)
                st = await api.status(b.id)
            finally:
                await api.aclose()
            await store.update_batch(b.id, st.state, st.succeeded, st.failed)
            cancelled.append(b.id)
        return (await store.batches() if cancelled else records), cancelled
