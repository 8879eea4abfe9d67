"""The async prober: Stage 0 and the parent ladder of any domain (`domains.Domain`: its jobs and
its grader), every rollout cached, graded and stored.

Generation and grading are pipelined: each worker hands its response to the domain's grader (the
verifier pool, the sandbox) and goes on, so grading runs while the next calls are in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..clients import BudgetReached, ChatRequest, Client, ProviderError
from ..clients.errors import endpoint_failure
from ..ladder.contract import Domain, Job, ProbeConfig
from ..runtime import frozen_heap, gather_or_cancel, jobs_in_flight
from ..schemas import LADDER, Rollout, Verdict
from ..store import FailedJob, Store

J = TypeVar("J", bound=Job)


def job_request(client: Client, job: Job, *, temperature: float, max_tokens: int) -> ChatRequest:
    """The call a job makes (its key is the cache's)."""
    return client.request(job.messages, k=job.k, temperature=temperature, max_tokens=max_tokens)


def asked_jobs(jobs: Sequence[J], config: ProbeConfig, skip_parents: Collection[str]) -> list[J]:
    """``jobs`` as asked: without the parent jobs (its conditions') of the families ``skip_parents``
    names, and without their system message where ``config.system_prompt`` is off (another request,
    so another call key)."""
    # a parent job's target is a condition (config.conditions may be None: the domain's own)
    kept = [j for j in jobs if j.pid not in skip_parents or j.target not in LADDER]
    if config.system_prompt:
        return kept
    return [replace(j, messages=[m for m in j.messages if m["role"] != "system"]) for j in kept]


async def uncached_calls(jobs: Sequence[Job], *, client: Client, store: Store, temperature: float,
                         max_tokens: int) -> list[ChatRequest]:
    """The distinct calls ``run_jobs`` would send for ``jobs``: those the store has no answer for.
    Nothing is sent."""
    todo: dict[str, ChatRequest] = {}
    for job in jobs:
        request = job_request(client, job, temperature=temperature, max_tokens=max_tokens)
        key = request.key()
        if key not in todo and await store.get_call(key) is None:
            todo[key] = request
    return list(todo.values())


async def run_jobs(
    jobs: Sequence[J],
    grade: Callable[[J, str], Awaitable[Verdict]],
    *,
    client: Client,
    store: Store,
    run_id: str,
    student: str,
    source: Callable[[J], str],
    temperature: float,
    max_tokens: int,
    workers: int | None = None,
    on_done: Callable[[Rollout], None] | None = None,
    on_failed: Callable[[FailedJob], None] | None = None,
) -> int:
    """Ask the student for every job through the cached client, grade each answer as it arrives
    (other calls stay in flight meanwhile), and store the rollout; returns how many were stored.

    Rollouts are stored as they are graded (the store commits in small groups), so a crash loses
    at most the calls in flight, and those come back from the call cache if they had finished.
    A job whose call fails for good (a ProviderError after the client's retries: a permanent 4xx,
    retries spent) is stored as a failed job with its reason, never as an answer, and the run goes
    on; a call refused by the client's budget (``max_cost``) stops the workers, the calls in flight
    finishing and stored. An error of the endpoint itself (no connection, a refused key, a wrong URL)
    stops the run when the endpoint has answered nothing yet (every job would fail the same way); once
    it has, the endpoint was lost mid-run: the client sends no more calls (``Client.lost``), and every
    job left whose answer is not stored is a failed job (a rerun asks it). Any other exception is a
    bug and propagates.
    ``workers`` jobs run at once (default: ``JOBS_PER_SLOT`` per client slot).
    """
    queue: asyncio.Queue[J] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    done = 0

    async def record_failure(job: J, call_key: str, reason: str) -> None:
        failed = FailedJob(run_id=run_id, student=student, source=source(job), pid=job.pid, target=job.target,
                           k=job.k, call_key=call_key, reason=reason)
        await store.put_failed_job(failed, wait=False)
        if on_failed:
            on_failed(failed)

    async def worker() -> None:
        nonlocal done
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            request = job_request(client, job, temperature=temperature, max_tokens=max_tokens)
            try:
                result = await client.complete(request)
            except BudgetReached:  # --max-cost: no new call; the calls in flight finish and are kept
                return
            except ProviderError as exc:  # the client stored the failed call; record the job, go on
                if endpoint_failure(exc) and not client.usage.successes:  # never answered: the URL, the key
                    raise
                await record_failure(job, request.key(), " ".join(f"{type(exc).__name__}: {exc}".split())[:500])
                continue
            rollout = Rollout(
                run_id=run_id, student=student, pid=job.pid, target=job.target, k=job.k,
                call_key=request.key(), response=result.text, verdict=await grade(job, result.text),
                source=source(job),
            )
            await store.put_rollout(rollout, wait=False)
            done += 1
            if on_done:
                on_done(rollout)

    try:
        with frozen_heap():
            n = jobs_in_flight(client.concurrency, workers)
            await gather_or_cancel(*(worker() for _ in range(max(1, n))))  # an endpoint failure stops them all
    finally:
        await store.flush()  # rollouts are queued without waiting; make them durable before returning
    return done


async def run_probe(
    domain: Domain,
    families: Sequence[Any],
    config: ProbeConfig,
    *,
    client: Client,
    store: Store,
    run_id: str,
    source: str = "",
    workers: int | None = None,
    on_done: Callable[[Rollout], None] | None = None,
    on_failed: Callable[[FailedJob], None] | None = None,
    donors: Sequence[Any] | None = None,
    skip_parents: Collection[str] = (),
) -> int:
    """Run every job of Stage 0 and the ladder (``skip_parents``: pids of families whose parent
    jobs are not asked); returns the number of rollouts stored. Safe to
    rerun: cached calls are free, failed jobs are asked again and every answer is graded again
    (so an ungraded one gets its verdict). ``source``: the set probed (rollouts are filed under
    ``domain.rollout_source``); ``donors``: the families the controls draw from (default: ``families``,
    the whole set when only some families are probed)."""

    async def grade(job: Job, text: str) -> Verdict:
        return await domain.grade(job, text, config)

    jobs = asked_jobs(domain.plan_jobs(families, config, families if donors is None else donors), config, skip_parents)
    return await run_jobs(jobs, grade, client=client, store=store, run_id=run_id, student=config.student,
                          source=lambda job: domain.rollout_source(job.family, source),
                          temperature=config.temperature, max_tokens=config.max_tokens, workers=workers,
                          on_done=on_done, on_failed=on_failed)


async def regrade(rollouts: Sequence[Rollout], grade: Callable[[Rollout], Awaitable[Verdict]],
                  store: Store) -> list[Rollout]:
    """Grade ``rollouts`` again from their stored responses (no call) and store the new verdicts;
    returns the regraded rollouts (some may still be ungraded if grading fails again)."""
    verdicts = await asyncio.gather(*(grade(r) for r in rollouts))
    out = [r.model_copy(update={"verdict": v}) for r, v in zip(rollouts, verdicts)]
    for r in out:
        await store.put_rollout(r, wait=False)
    await store.flush()
    return out
