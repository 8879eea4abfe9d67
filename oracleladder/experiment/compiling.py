"""The compile stages of `Experiment`: milestone families compiled by a teacher from a pool of problems, and
the primitives and INTEGRATE steps of existing families."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..clients.errors import endpoint_failure
from ..clients.function import ModelFunction
from ..compiler.loop import Compiler
from ..compiler.workers import BUDGET_CHECK
from ..construction.screen import KEPT, raw_source
from ..domains.math.integrate_compile import IntegrateDomain
from ..domains.math.primitive_compile import PrimitiveDomain
from ..ladder import (
    CompileDomain,
    Settings,
)
from ..schemas import (
    Family,
)
from .configs import CompileConfig, configured
from .core import ExperimentCore
from .endpoint import TEACHER_CONCURRENCY, Endpoint, as_endpoint
from .errors import ExperimentError
from .results import (
    CompileEstimate,
    CompileResult,
    IntegrateResult,
    PrimitivesResult,
)
from .run import Progress, calling, no_progress


class CompileStages(ExperimentCore):
    """Mixed into `Experiment`."""

    async def compile(self, problems: str | os.PathLike[str], teacher: str | Endpoint | ModelFunction,
                      config: CompileConfig | None = None, *, name: str | None = None, version: str | None = None,
                      progress: Progress | None = None, **options: Any) -> CompileResult | CompileEstimate:
        """Compile milestone families with a teacher: validators, retry on error, every attempt stored.
        ``null_values``: the pool's cell texts that mean "missing"; ``encoding``: a CSV pool's, when it
        is not UTF-8; ``screened``: a raw screen's set (`screen_pool`), whose survivors alone are compiled;
        ``teacher_prompt``: the toolkit's, or ``paper`` (Appendix U as published; math); ``shard``: only
        the problems of that shard (`ladder.shards`). With ``dry_run``, the calls it would make and their
        estimate, and no run. A Python function as the teacher is the model python/``name`` at ``version``
        (`as_endpoint`)."""
        c = configured(CompileConfig, config, options)
        ladder = self.domain(c.domain, Settings(granularity=c.granularity, independent_solve=c.independent_solve,
                                                fields=c.fields, null_values=c.null_values,
                                                encoding=c.encoding, teacher_prompt=c.teacher_prompt))
        endpoint, store = as_endpoint(teacher, name=name, version=version), self.store
        if c.domain == "math":  # a teacher's set is compiled under one prompt: the other's would replace it family by family
            stored = {f.provenance.teacher_prompt or "toolkit"
                      for f in await store.families(source=endpoint.model, granularity=c.granularity)}
            if stored - {c.teacher_prompt}:
                raise ExperimentError(f"{store.path} holds families of {endpoint.model} compiled with the "
                                      f"{', '.join(sorted(stored))} teacher prompt; compile with --teacher-prompt "
                                      f"{c.teacher_prompt} into another --store")
        problems_path = Path(problems)
        pool = ladder.read_problems(problems_path, c.on_duplicate.value)
        if not pool:
            raise ExperimentError(f"{problems_path}: no problems to compile (an empty pool)")
        if c.screened is not None:
            pool = await self._survivors(c.screened, c.domain, pool)
        pool = c.shard.of(pool)
        if c.dry_run:  # a problem compiled by this teacher, or skipped for its reference answer, sends nothing
            usable = [p for p in pool if ladder.unusable(p) is None]
            async with await self.client(endpoint, default_concurrency=TEACHER_CONCURRENCY) as client:
                todo = [p for p in usable if not any(
                    a.passed for a in await store.compile_attempts(p.pid, client.name, ladder.granularity))]
                firsts = [client.request(ladder.teacher_messages(p)[0], temperature=0.0, max_tokens=c.max_tokens)
                          for p in todo]
            return CompileEstimate.of(client, firsts, problems=len(pool), unusable=len(pool) - len(usable))
        self._grading(ladder)
        meta = {"teacher": endpoint.model, "granularity": c.granularity, "max_attempts": c.max_attempts,
                "problems": str(problems_path), "teacher_prompt": c.teacher_prompt}
        async with calling(store, endpoint, "compile", meta, concurrency=TEACHER_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            with ladder, (progress or no_progress)(f"compile with {endpoint.model}", len(pool), client) as advance:
                compiler = Compiler(client, store, ladder, max_attempts=c.max_attempts, max_tokens=c.max_tokens)
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
        failure = client.last_error if client.usage.successes == 0 else None
        return CompileResult(
            all_failed=endpoint.explain(failure) if failure is not None and endpoint_failure(failure) else None,
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

    async def compile_primitives(self, teacher: str | Endpoint, config: CompileConfig | None = None, *,
                                 source: str = "release", progress: Progress | None = None,
                                 **options: Any) -> PrimitivesResult:
        """A primitive (the key idea, docs/primitive.md) for each family of the math roadmap set
        ``source`` that has none, from its problem and roadmap; every attempt stored. Of the config
        (`compile`'s), its ``max_attempts`` and ``max_tokens``."""
        families = await self.roadmap_set(source)
        todo = [f for f in families if f.primitive is None]
        return PrimitivesResult(**await self._fill(teacher, source, todo, PrimitiveDomain(), "primitives",
                                                   configured(CompileConfig, config, options), progress),
                                families=len(families), had_primitive=len(families) - len(todo))

    async def compile_integrate(self, teacher: str | Endpoint, config: CompileConfig | None = None, *,
                                source: str = "release", progress: Progress | None = None,
                                **options: Any) -> IntegrateResult:
        """The INTEGRATE step (Appendix B: released families have none) for each family of the math
        roadmap set ``source`` that has none, from its problem and roadmap; its gold must equal the
        reference answer by the verifier; every attempt stored. Of the config, as `compile_primitives`."""
        families = await self.roadmap_set(source)
        todo = [f for f in families if f.integrate is None]
        return IntegrateResult(**await self._fill(teacher, source, todo, IntegrateDomain(), "integrate",
                                                  configured(CompileConfig, config, options), progress),
                               families=len(families), had_integrate=len(families) - len(todo))

    async def _fill(self, teacher: str | Endpoint, source: str, todo: list[Family], domain: CompileDomain,
                    what: str, config: CompileConfig, progress: Progress | None) -> dict:
        """One part (``what``) of existing families written by a teacher in the compile loop: the run's
        figures, as the result's fields."""
        endpoint = as_endpoint(teacher)
        meta = {"teacher": endpoint.model, "source": source, "max_attempts": config.max_attempts, "families": len(todo)}
        async with calling(self.store, endpoint, f"compile-{what}", meta, concurrency=TEACHER_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            with (progress or no_progress)(f"{what} with {endpoint.model}", len(todo), client) as advance:
                compiler = Compiler(client, self.store, self._grading(domain), max_attempts=config.max_attempts,
                                    max_tokens=config.max_tokens)
                outcomes = await compiler.compile_all(todo, on_done=advance)
            run.incomplete = any(o.infrastructure_failure for o in outcomes)
        return dict(
            run_id=run.id, compiled=sum(o.ok for o in outcomes),
            failed_why={o.pid: f"{o.errors[0].check}: {o.errors[0].reason}" for o in outcomes if not o.ok and o.errors},
            infrastructure_failures=sum(o.infrastructure_failure for o in outcomes), usage=client.usage,
            budget_stop=client.budget_stop)
