"""The construction stages of `Experiment`: the anchor screen of a roadmap set, and the raw screen of a pool."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..construction.screen import DIRECT, RULES, judge_direct, raw_source, screen as screen_families
from ..domains.math import collect_results
from ..ladder import (
    WHOLE,
    Job,
    ProbeConfig as JobConfig,  # what the domain plans and grades a probe's jobs by
    Settings,
)
from ..probe.runner import run_jobs
from ..schemas import LADDER
from ..schemas.types import GradeStatus
from ..store import FailedJob, ScreenVerdict
from .configs import ReanchorConfig, ScreenConfig, configured
from .endpoint import CONCURRENCY, Endpoint, as_endpoint
from .errors import ExperimentError
from .probing import ProbeStages
from .results import (
    JobFailure,
    ProbeResult,
    ScreenResult,
)
from .run import Progress, calling, no_progress


class ScreenStages(ProbeStages):
    """Mixed into `Experiment` (a screen probes its anchor)."""

    async def screen(self, anchor: str | Endpoint, config: ScreenConfig | None = None, *,
                     progress: Progress | None = None, **options: Any) -> ScreenResult:
        """Anchor screen and structural filter (Section 3): probe the anchor (C1 and Stage 0: ordinary
        cached rollouts) on a roadmap set, then store each family's verdict in the set (default name:
        the anchor); ``shard``: only the families of that shard. Returns the probe's result with the
        set and its verdicts counted."""
        c = configured(ScreenConfig, config, options)
        endpoint = as_endpoint(anchor)
        set_name = c.set_name or endpoint.model
        probed = await self.probe(endpoint, k=c.k, conditions=(DIRECT,), stage0=True, max_tokens=c.max_tokens,
                                  temperature=c.temperature, grader=c.grader, source=c.source, shard=c.shard,
                                  progress=progress)
        assert isinstance(probed, ProbeResult)  # not a dry run
        families = c.shard.of(await self.roadmap_set(c.source))
        rollouts = await self.store.answered_by(probed.run_id, endpoint.model)
        assert c.rule in RULES  # ScreenConfig takes no other (its --rule's check)
        verdicts = screen_families(families, collect_results(families, rollouts), set_name=set_name,
                                   anchor=endpoint.model, rule=c.rule, k=c.k, max_tokens=c.max_tokens, run_id=probed.run_id)
        for verdict in verdicts:
            await self.store.put_screen_verdict(verdict, wait=False)
        await self.store.flush()
        return ScreenResult(**dict(probed), set_name=set_name, verdicts=dict(Counter(v.verdict for v in verdicts)))

    async def screen_pool(self, problems: str | os.PathLike[str], anchor: str | Endpoint,
                          config: ScreenConfig | None = None, *, progress: Progress | None = None,
                          **options: Any) -> ScreenResult:
        """The raw screen (Appendix N, the code pilot): each problem of a pool asked directly K times by the
        anchor, before any teacher call, graded by the domain's grader; a problem it solves once is dropped.
        Ordinary cached rollouts (filed under ``pool:DOMAIN``); each problem's verdict stored in the set
        (default name: the anchor), which `compile(screened=SET)` compiles the survivors of. ``shard``: only
        the problems of that shard (`ladder.shards`)."""
        # a raw pool has one rule: a call without a config screens with it
        c = configured(ScreenConfig, config, {**({} if config is not None else {"rule": "direct-only"}), **options})
        if c.rule != "direct-only":
            raise ExperimentError(f"the {c.rule} rule needs roadmaps (the milestone test): a raw pool is screened "
                                  "with --rule direct-only, or compile it and screen the set")
        endpoint, path = as_endpoint(anchor), Path(problems)
        set_name = c.set_name or endpoint.model
        ladder = self.domain(c.domain, Settings(fields=c.fields, null_values=c.null_values, encoding=c.encoding))
        pool = c.shard.of(ladder.read_problems(path, c.on_duplicate.value))
        if not pool:
            raise ExperimentError(f"{path}: no problems to screen (an empty pool"
                                  + ("" if c.shard == WHOLE else f", or none in shard {c.shard}") + ")")
        grading = JobConfig(student=endpoint.model, k=c.k, conditions=(DIRECT,), stage0=False,
                            max_tokens=c.max_tokens, temperature=c.temperature, grader=c.grader)
        unusable = {p.pid: why.reason for p in pool if (why := ladder.unusable(p)) is not None}
        jobs = [Job(p, DIRECT, i, ladder.direct_messages(p)) for p in pool if p.pid not in unusable for i in range(c.k)]
        source, failed = raw_source(c.domain), []
        self._grading(ladder)
        async with calling(self.store, endpoint, "screen-pool", {**grading.__dict__, "problems": str(path),
                                                                 "domain": c.domain, "set": set_name},
                           concurrency=CONCURRENCY, notify=self._notify, cluster=self.cluster) as (client, run):
            for problem in pool:  # the funnel's candidates
                await ladder.store_problem(self.store, problem)
            with ladder, (progress or no_progress)(f"screen {endpoint.model}", len(jobs), client) as advance:
                def fail(job: FailedJob) -> None:
                    failed.append(job)
                    advance(job)

                await run_jobs(jobs, lambda job, text: ladder.grade_direct(job.family, text, grading), client=client,
                               store=self.store, run_id=run.id, student=endpoint.model, source=lambda _: source,
                               temperature=c.temperature, max_tokens=c.max_tokens, on_done=advance, on_failed=fail,
                               workers=len(jobs) if client.batch else None)  # in batch mode every job waits at once
            ungraded = await self.store.rollout_count(run_id=run.id, status=GradeStatus.UNGRADED)
            run.incomplete = bool(failed or ungraded)
        graded: dict[str, list[bool]] = {p.pid: [] for p in pool}
        for r in await self.store.answered_by(run.id, endpoint.model):
            if r.verdict.graded:
                graded[r.pid].append(r.verdict.accepted)
        verdicts: Counter[str] = Counter()
        for problem in pool:
            verdict, reason, direct = judge_direct(unusable.get(problem.pid), graded[problem.pid], c.k, endpoint.model)
            verdicts[verdict] += 1
            await self.store.put_screen_verdict(ScreenVerdict(
                set_name=set_name, pid=problem.pid, source=source, anchor=endpoint.model, rule=c.rule, k=c.k,
                max_tokens=c.max_tokens, verdict=verdict, reason=reason, direct=direct, stage0={}, run_id=run.id),
                wait=False)
        await self.store.flush()
        return ScreenResult(
            run_id=run.id, families=len(pool), usage=client.usage, ungraded=ungraded, without_primitive=0,
            budget_stop=client.budget_stop, batch_rows_submitted=client.batch_rows_submitted,
            failed_jobs=[JobFailure(pid=j.pid, target=j.target, k=j.k, reason=j.reason) for j in failed],
            endpoint_lost=None if client.lost is None else " ".join(str(client.lost).split()),
            unusable=len(unusable), set_name=set_name, verdicts=dict(verdicts))

    async def reanchor_counts(self, anchors: Sequence[str], models: Sequence[str],
                              config: ReanchorConfig | None = None, *, endpoints: Mapping[str, Endpoint] | None = None,
                              progress: Progress | None = None,
                              **options: Any) -> tuple[dict[str, int], dict[str, dict[str, int]], list[str]]:
        """The composition-gap counts of `gap_counts` for a re-anchoring (Appendix B, Tables 3-6), each
        model's Stage 0 and C1-C3 rollouts read at the config's budgets; with ``endpoints`` (a model's
        endpoint by model), what is missing probed first: in one probe where Stage 0 and C1-C3 share the
        budget, else Stage 0 (with C1, as a screen) at its own (stored calls are not asked again)."""
        c = configured(ReanchorConfig, config, options)
        split = c.stage0_max_tokens not in (None, c.max_tokens)
        probes = [(LADDER.parent_probes, not split, c.max_tokens)] + (
            [((LADDER.parent_probes[0],), True, c.stage0_max_tokens)] if split else [])
        for model, endpoint in (endpoints or {}).items():
            for conditions, stage0, budget in probes:
                probed = await self.probe(endpoint, k=c.k, conditions=conditions, stage0=stage0, max_tokens=budget,
                                          temperature=c.temperature, source=c.source, progress=progress)
                assert isinstance(probed, ProbeResult)  # not a dry run
                self._notify(f"{model} at {budget} tokens: {probed.usage.requests} requests, "
                             f"{probed.usage.cache_hits} cache hits")
        return await self.gap_counts(anchors, models, source=c.source, k=c.k, max_tokens=c.max_tokens,
                                     temperature=c.temperature, stage0_max_tokens=c.stage0_max_tokens)
