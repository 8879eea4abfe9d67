"""The Python API: one experiment's store, and what the `ladder` commands do with it.

    async with Experiment("ladder.sqlite") as ex:
        await ex.import_families("families.jsonl")
        await ex.probe(Endpoint("openai/gpt-5.4-mini"), k=8)
        report = await ex.report(["openai/gpt-5.4-mini"])

`SyncExperiment` offers the same methods as plain calls (a notebook, a script). The CLI is a thin
layer over this module: it parses options, calls an Experiment, prints.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clients, verify
from ._lazy import lazy_module
from .audit import format as fmt
from .audit.judge import ask_judge, draw, key_path, write_sheet
from .clients import Client, ConfigurationError, DEFAULT_PRICES, PriceTable
from .clients.batch import CREATING, DEFAULT_POLL_S, DEFAULT_QUIET_S, ENDED, make_batch_api, make_batch_client
from .clients.errors import endpoint_failure, explain
from .clients.providers import key_env_for, parse_model, server_slots
from .compiler.loop import Compiler
from .compiler.workers import BUDGET_CHECK
from .construction.funnel import Funnel, fate, final_set, funnel as build_funnel
from .construction.screen import DIRECT, RULES, screen as screen_families
from .domains import get_domain
from .ladder import Domain, Job, Settings
from .domains.math import MathDomain, collect_results, run_grader
from .domains.math.primitive_compile import PrimitiveDomain
from .ladder.outcomes import FamilyResults
from .domains.math.primitive import without_primitive
from .report.primitive import primitive_vs_roadmap, write_primitive_vs_roadmap
from .probe.runner import ProbeConfig, regrade as regrade_rollouts, run_probe, uncached_calls
from .prompts import load as load_prompt
from .schemas import CONDITION_NAMES, PRIMITIVE_CONDITIONS, Family, parse_condition, parse_roadmap_set, to_released
from .schemas.jsonl import InputError, OnDuplicate, read_unique, write_jsonl
from .schemas.types import GradeStatus
from .store import BatchRecord, RunRecord, Store
from .validators import check_family, family_leak_level, summarize as summarize_checks
from .validators.atomicity import atomicity_problem
from .verify import GRADER_VERSIONS, VerifierPool, grader_name

if TYPE_CHECKING:
    from .construction import reanchor as _reanchor
    from .report import compare as _compare, report as _report
    from .viewer import site as _site
else:  # loaded when a command first needs them (pyarrow, SciPy, matplotlib, markdown-it)
    _reanchor = lazy_module("oracleladder.construction.reanchor")
    _compare = lazy_module("oracleladder.report.compare")
    _report = lazy_module("oracleladder.report.report")
    _site = lazy_module("oracleladder.viewer.site")

BUDGET_STOPPED = "stopped_at_budget"  # a run's status when max_cost stopped it
FINISHED_WITH_FAILURES = "done_with_failures"  # a run's status when some of its work has no result
GRANULARITIES = ("coarse", "default", "fine")


class ExperimentError(ValueError):
    """What was asked cannot be done with this store or these options; the message says what to do."""


class EndpointError(ConfigurationError):
    """The client of an endpoint cannot be made (bad model string, missing key, no price for max_cost)."""


# A progress display: called with a run's description, its number of jobs and its client (for the
# spend so far); the context it returns is entered for the run, and yields the callback called once
# per finished job.
Progress = Callable[[str, int, Client], AbstractContextManager[Callable[[object], None]]]


@contextmanager
def _no_progress(description: str, total: int, client: Client) -> Iterator[Callable[[object], None]]:
    yield lambda _: None


@dataclass(frozen=True)
class Endpoint:
    """Where and how a model is called; what the CLI's endpoint options (--base-url, --concurrency,
    --param, --extra-body, ...) say. The defaults are make_client's.

    ``base_urls``: OpenAI-compatible servers, several for replicas of one model. ``concurrency``:
    calls in flight (None: what a server says it runs at once, else the command's default).
    ``extra_body``: top-level request-body fields (part of each call's cache key). ``max_cost``: USD.
    ``batch``: the calls go through the provider's batch API (no rate limits: every call waits in a
    batch), polled first after ``batch_poll`` seconds, submitted once none has come for ``batch_quiet``."""

    model: str
    base_urls: Sequence[str] | None = None
    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key_env: str | None = None
    model_name: str | None = None
    timeout: float = 120.0
    max_cooldown: float = 120.0
    structured: str = "auto"
    prices: PriceTable = DEFAULT_PRICES
    max_cost: float | None = None
    batch: bool = False
    batch_poll: float = DEFAULT_POLL_S
    batch_quiet: float = DEFAULT_QUIET_S

    def explain(self, error: BaseException) -> str:
        """One line for a failed call to this endpoint (clients.errors.explain)."""
        provider = parse_model(self.model)[0]
        base_url = self.base_urls[0] if self.base_urls else None
        return explain(error, provider=provider, base_url=base_url,
                       key_env=key_env_for(provider, base_url, self.api_key_env))


def request_body(params: Sequence[str] | None, extra_body: str | None) -> dict[str, Any]:
    """An Endpoint's extra_body from the CLI's --extra-body (a JSON object) and --param NAME=VALUE
    options (VALUE is JSON, else a string; --param wins)."""
    body: dict = {}
    if extra_body:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            raise ExperimentError(f"--extra-body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ExperimentError("--extra-body must be a JSON object, e.g. '{\"top_k\": 20}'")
    for item in params or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ExperimentError(f"--param {item!r}: expected NAME=VALUE, e.g. --param top_k=20")
        try:
            body[name.strip()] = json.loads(raw)
        except ValueError:
            body[name.strip()] = raw  # not JSON: the string itself
    return body


def _endpoint(model: str | Endpoint) -> Endpoint:
    return model if isinstance(model, Endpoint) else Endpoint(model)


def _grader(grader: str) -> str:
    try:
        return grader_name(grader)
    except ValueError as exc:
        raise ExperimentError(str(exc)) from None


def load_families(path: str | os.PathLike[str], on_duplicate: OnDuplicate = "error") -> list[Family]:
    """Families in the released record format; one per (pid, granularity): what the store keeps apart."""
    return read_unique(path, Family, on_duplicate, key=lambda f: (f.pid, f.provenance.granularity))


@dataclass
class CheckResult:
    """Every deterministic validator on some families: one report per family, and the totals."""

    families: list[Family]
    reports: list
    totals: dict
    use_corrections: bool = False

    def leak_level(self, family: Family) -> str | None:
        return family_leak_level(family, use_corrections=self.use_corrections)


def check(path: str | os.PathLike[str], *, use_corrections: bool = False,
          on_duplicate: OnDuplicate = "error") -> CheckResult:
    """Run every deterministic validator on the families of a released-format file (no store)."""
    loaded = load_families(path, on_duplicate)
    reports = [check_family(f, use_corrections=use_corrections) for f in loaded]
    return CheckResult(loaded, reports, summarize_checks(reports, loaded, use_corrections=use_corrections),
                       use_corrections)


@dataclass
class Report:
    """What a report counts: per student, its results on a roadmap set (families whose reference answer
    is unusable left out), and what is in no table. ``summary(student)`` gives its tables as a dict;
    ``Experiment.write_report`` writes report.md, report.json, the plots and the HTML."""

    source: str
    domain: str
    tau: int
    families: list  # the set's families (of the first student)
    results: dict[str, list[FamilyResults]]
    missing: dict[str, dict]  # per student, its missing_counts (ungraded rollouts, failed jobs)
    ungradable: dict[str, str]  # pid -> why its reference answer is unusable
    graders: dict[str, str] | None = None  # per student, the grader(s) and version(s) of its rollouts
    formats: dict[str, dict] | None = None  # per student, its format audit

    def summary(self, student: str) -> dict:
        return _report.summarize(self.results[student], self.tau)


class Experiment:
    """One experiment's store, and the verifier pool the commands grade with; an async context manager.

    ``readonly``: None opens an existing store read-only where it cannot be written, else for writing
    (a missing file is created). ``notify``: called with one line for what a run learns on its own (a
    server's slot count or served model name). ``workers``: the verifier pool's size (default: the
    CPU count)."""

    def __init__(self, store_path: str | os.PathLike[str] = "ladder.sqlite", *, readonly: bool | None = None,
                 notify: Callable[[str], None] | None = None, workers: int | None = None) -> None:
        self.path = Path(store_path)
        self._readonly = readonly
        self._notify = notify or (lambda _: None)
        self._workers = workers
        self._pool: VerifierPool | None = None
        self._store: Store | None = None

    async def __aenter__(self) -> Experiment:
        readonly = self._readonly
        if readonly is None:
            readonly = self.path.exists() and not (os.access(self.path, os.W_OK)
                                                   and os.access(self.path.absolute().parent, os.W_OK))
        self._store = await Store.open(self.path, readonly=readonly)
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._pool is not None:
                self._pool.close()
        finally:
            if self._store is not None:
                await self._store.close()

    @classmethod
    def sync(cls, store_path: str | os.PathLike[str] = "ladder.sqlite", **options: Any) -> SyncExperiment:
        """The same experiment with plain (blocking) methods; see SyncExperiment."""
        return SyncExperiment(store_path, **options)

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("use the Experiment as `async with Experiment(path) as ex:`")
        return self._store

    @property
    def pool(self) -> VerifierPool:
        """The verifier pool, started on first use and closed with the experiment."""
        if self._pool is None:
            self._pool = verify.VerifierPool(self._workers)  # read when used: a test may stand one in
        return self._pool

    # ------------------------------------------------------------------ families

    async def import_families(self, path: str | os.PathLike[str], *, source: str = "release",
                              on_duplicate: OnDuplicate = "error") -> int:
        """Import released-format families, filed under ``source``; returns how many."""
        families = load_families(path, on_duplicate)
        for family in families:
            family.provenance.source = source
            await self.store.put_family(family)
        return len(families)

    async def roadmap_set(self, name: str) -> list[Family]:
        """The families of one math roadmap set ('release', a teacher, TEACHER@coarse|fine), refusing
        an empty or unknown set by name."""
        return await self.domain_families(self.domain("math"), name)

    async def domain_families(self, domain: Domain, source: str) -> list:
        """The families of one set of a domain, refusing an empty or unknown set by name."""
        try:
            return await domain.load_families(self.store, source)
        except InputError as exc:  # the domain's one line on what to run first
            raise ExperimentError(str(exc)) from None

    def domain(self, name: str = "math", settings: Settings = Settings()) -> Domain:
        """The domain of a --domain name (refused naming the known ones)."""
        try:
            return get_domain(name, settings)
        except InputError as exc:
            raise ExperimentError(str(exc)) from None

    def _grading(self, domain: Domain) -> Domain:
        """``domain``, for a run that grades: the math domain grades in the experiment's pool, not in
        one of its own per run (another domain starts what it holds when entered)."""
        if domain.verifier and isinstance(domain, MathDomain) and domain.pool is None:
            domain.pool = self.pool
        return domain

    async def set_verdicts(self, set_name: str) -> list:
        verdicts = await self.store.screen_verdicts(set_name)
        if not verdicts:
            known = ", ".join(await self.store.screen_sets()) or "none"
            raise ExperimentError(f"{self.store.path} holds no screened set '{set_name}' (sets: {known}); "
                                  "run `ladder screen` first")
        return verdicts

    async def families(self, *, teacher: str | None = None, set_name: str | None = None) -> list[Family]:
        """The store's families (of one source/teacher), or the final set of `screen(set_name=...)`."""
        if set_name is None:
            return await self.store.families(source=teacher)
        if teacher is not None:
            raise ExperimentError("--set and --teacher exclude each other (a set has its own source)")
        verdicts = await self.set_verdicts(set_name)
        return final_set(await self.roadmap_set(verdicts[0].source), verdicts)

    async def export(self, out: str | os.PathLike[str], *, teacher: str | None = None,
                     set_name: str | None = None) -> int:
        """Write families in the released record format; returns how many."""
        return write_jsonl(out, (to_released(f) for f in await self.families(teacher=teacher, set_name=set_name)))

    # ------------------------------------------------------------------ clients

    async def client(self, endpoint: str | Endpoint, *, default_concurrency: int = 64) -> Client:
        """A client of ``endpoint`` caching in the store. Without a concurrency, each server's own slot
        count where it says (a small server swamped with queued requests times them out), else
        ``default_concurrency``; without a model_name, a server listing one model is asked by that name."""
        endpoint = _endpoint(endpoint)
        concurrency = await self._concurrency(endpoint, default_concurrency)
        options = dict(extra_body=endpoint.extra_body, api_key_env=endpoint.api_key_env,
                       model_name=endpoint.model_name, timeout=endpoint.timeout, max_cooldown=endpoint.max_cooldown,
                       structured=endpoint.structured, prices=endpoint.prices, max_cost=endpoint.max_cost)
        try:
            if endpoint.batch:  # no rate limits: every call waits in a batch
                client = make_batch_client(endpoint.model, cache=self.store, base_url=endpoint.base_urls,
                                           poll=endpoint.batch_poll, quiet=endpoint.batch_quiet, **options)
            else:
                client = clients.make_client(  # read when called: a test may stand one in
                    endpoint.model, base_url=endpoint.base_urls, cache=self.store, concurrency=concurrency,
                    rpm=endpoint.rpm, tpm=endpoint.tpm, **options)
        except ConfigurationError as exc:
            raise EndpointError(str(exc)) from exc
        if endpoint.base_urls and not endpoint.model_name:
            name = await client.use_served_model()
            if name is not None:
                self._notify(f"{endpoint.base_urls[0]} serves one model, {name}: the requests carry that name "
                             "(--model-name NAME to choose)")
        return client

    async def _concurrency(self, endpoint: Endpoint, default: int) -> int | list[int]:
        if endpoint.concurrency is not None:
            return endpoint.concurrency
        per_replica = []
        for url in endpoint.base_urls or []:
            slots = await server_slots(url)
            if slots is not None:
                self._notify(f"{url} runs {slots} request(s) at once (its /props): --concurrency {slots}")
            per_replica.append(slots or default)
        return per_replica[0] if len(per_replica) == 1 else per_replica or default

    # ------------------------------------------------------------------ compile

    async def compile(self, problems: str | os.PathLike[str], teacher: str | Endpoint, *,
                      granularity: str = "default", domain: str = "math", max_attempts: int = 3,
                      max_tokens: int = 4096, independent_solve: bool = True, on_duplicate: OnDuplicate = "error",
                      fields: Sequence[str] | None = None, dry_run: bool = False,
                      progress: Progress | None = None) -> dict:
        """Compile milestone families with a teacher: validators, retry on error, every attempt stored.
        Returns the run's summary (with ``dry_run``: the calls it would make and their estimate)."""
        if granularity not in GRANULARITIES:
            raise ExperimentError(f"unknown granularity '{granularity}'; known: {', '.join(GRANULARITIES)}")
        ladder = self.domain(domain, Settings(granularity=granularity, independent_solve=independent_solve,
                                              fields=tuple(fields or ())))
        endpoint, store = _endpoint(teacher), self.store
        teacher = endpoint.model
        problems_path = Path(problems)
        problems = ladder.read_problems(problems_path, on_duplicate)
        client = await self.client(endpoint, default_concurrency=16)
        if dry_run:
            todo = [p for p in problems
                    if not any(a.passed for a in await store.compile_attempts(p.pid, client.name, ladder.granularity))]
            firsts = [client.request(ladder.teacher_messages(p)[0], temperature=0.0, max_tokens=max_tokens)
                      for p in todo]
            await client.aclose()
            return {**estimate(client, firsts), "problems": len(problems)}
        await client.check_batch()
        self._grading(ladder)
        run_id = await store.start_run("compile", {"teacher": teacher, "granularity": granularity,
                                                   "max_attempts": max_attempts, "problems": str(problems_path)})
        client.bind_run(run_id)
        status = "interrupted"
        try:
            with ladder, (progress or _no_progress)(f"compile with {teacher}", len(problems), client) as advance:
                compiler = Compiler(client, store, ladder, max_attempts=max_attempts, max_tokens=max_tokens)
                # in batch mode every problem is under way at once: its first attempts go in one batch
                outcomes = await compiler.compile_all(problems, on_done=advance,
                                                      concurrency=len(problems) if client.batch else None)
            status = (BUDGET_STOPPED if client.budget_stop else
                      FINISHED_WITH_FAILURES if any(o.infrastructure_failure for o in outcomes) else "done")
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        failed = {o.pid: [f"{e.check}: {e.reason}" for e in o.errors] for o in outcomes
                  if not o.ok and not o.infrastructure_failure}
        infra_failed = {o.pid: f"{o.errors[0].check} failure: {o.errors[0].reason}"
                        for o in outcomes if o.infrastructure_failure and o.errors[0].check != BUDGET_CHECK}
        # an endpoint that takes no request at all (no connection, a refused key, a wrong URL) is said in one
        # line; other failures are the problems' own, counted above, and a rerun retries them
        every_call_failed = (client.usage.successes == 0 and client.last_error is not None
                             and endpoint_failure(client.last_error))
        return {
            "all_failed": endpoint.explain(client.last_error) if every_call_failed else None,
            "run_id": run_id, "compiled": sum(o.ok for o in outcomes), "failed": len(failed),
            "infrastructure_failures": len(infra_failed),
            "attempts_per_family": dict(sorted(Counter(o.attempts for o in outcomes if o.ok).items())),
            "failed_checks": dict(Counter(e.split(":")[0] for errs in failed.values() for e in errs)),
            "failed_why": failed, "infrastructure_failed_why": infra_failed, **client.usage.as_dict(),
            "budget_stop": client.budget_stop, "batch_rows_submitted": client.batch_rows_submitted,
            "not_compiled_for_budget": sum(o.infrastructure_failure for o in outcomes) - len(infra_failed),
        }

    async def compile_primitives(self, teacher: str | Endpoint, *, source: str = "release", max_attempts: int = 3,
                                 max_tokens: int = 4096, progress: Progress | None = None) -> dict:
        """A primitive (the key idea, docs/primitive.md) for each family of the math roadmap set
        ``source`` that has none, from its problem and roadmap; every attempt stored. Returns the run's
        summary."""
        endpoint, store = _endpoint(teacher), self.store
        teacher = endpoint.model
        families = await self.roadmap_set(source)
        todo = [f for f in families if f.primitive is None]
        client = await self.client(endpoint, default_concurrency=16)
        run_id = await store.start_run("compile-primitives", {"teacher": teacher, "source": source,
                                                              "max_attempts": max_attempts, "families": len(todo)})
        status = "interrupted"
        try:
            with (progress or _no_progress)(f"primitives with {teacher}", len(todo), client) as advance:
                compiler = Compiler(client, store, PrimitiveDomain(self.pool), max_attempts=max_attempts,
                                    max_tokens=max_tokens)
                outcomes = await compiler.compile_all(todo, on_done=advance)
            status = (BUDGET_STOPPED if client.budget_stop else
                      FINISHED_WITH_FAILURES if any(o.infrastructure_failure for o in outcomes) else "done")
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        return {"run_id": run_id, "families": len(families), "had_primitive": len(families) - len(todo),
                "compiled": sum(o.ok for o in outcomes),
                "failed_why": {o.pid: f"{o.errors[0].check}: {o.errors[0].reason}" for o in outcomes
                               if not o.ok and o.errors},
                "infrastructure_failures": sum(o.infrastructure_failure for o in outcomes),
                **client.usage.as_dict(), "budget_stop": client.budget_stop}

    # ------------------------------------------------------------------ probe

    async def probe(self, student: str | Endpoint, *, k: int = 8, conditions: Sequence[str] | None = None,
                    stage0: bool = True, max_tokens: int = 4096, temperature: float = 1.0, seed: int = 0,
                    use_corrections: bool = False, grader: str = "strict", source: str = "release",
                    limit: int | None = None, domain: str = "math", primitive: bool = False,
                    primitive_fallback: bool = False, dry_run: bool = False, progress: Progress | None = None) -> dict:
        """Probe a student on one roadmap set: Stage 0 and the parent ladder with its controls (code:
        the helper test and C1-C3). Cached and resumable. ``conditions``: names (C1 or C1_direct, ...),
        default the domain's; ``primitive`` adds the primitive rung (C2-primitive and its control), run
        on the families with a primitive (with ``primitive_fallback``, a KEY_MOVE description for the
        others). ``limit``: probe the first N families; the controls still draw from the whole set.
        ``dry_run``: plan the jobs and return the calls the run would make after the cache, with their
        estimate. Returns the run's summary."""
        endpoint = _endpoint(student)
        ladder = self.domain(domain)
        default, known = ladder.conditions, ladder.conditions + ladder.optional_conditions
        try:
            chosen = tuple(dict.fromkeys(parse_condition(c) for c in conditions)) if conditions else default
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
        if primitive:
            chosen = tuple(dict.fromkeys(chosen + PRIMITIVE_CONDITIONS))
        unknown = [CONDITION_NAMES[c] for c in chosen if c not in known]
        if unknown:
            raise ExperimentError(f"the {domain} ladder has no condition {', '.join(unknown)}; "
                                  f"it has {', '.join(CONDITION_NAMES[c] for c in known)}")
        config = ProbeConfig(student=endpoint.model, k=k, conditions=chosen, stage0=stage0, max_tokens=max_tokens,
                             temperature=temperature, seed=seed, use_corrections=use_corrections,
                             grader=_grader(grader), primitive_fallback=primitive_fallback)
        return await self._probe(ladder, config, endpoint, source, limit, dry_run, progress)

    async def _probe(self, ladder: Domain, config: ProbeConfig, endpoint: Endpoint, source: str,
                     limit: int | None, dry_run: bool, progress: Progress | None) -> dict:
        store = self.store
        donors = await self.domain_families(ladder, source)
        families = donors[:limit]
        if ("C2_primitive_random" in config.conditions
                and len(donors) - len(without_primitive(donors, config.primitive_fallback)) == 1):
            raise ExperimentError(f"C2-primitive-random needs another family with a primitive in '{source}', and "
                                  "only one has one: `ladder compile --primitives-only` writes more "
                                  "(or --primitive-fallback)")
        client = await self.client(endpoint, default_concurrency=64)
        if dry_run:
            jobs = ladder.plan_jobs(families, config, donors)
            todo = await uncached_calls(jobs, client=client, store=store, temperature=config.temperature,
                                        max_tokens=config.max_tokens)
            await client.aclose()
            return {**estimate(client, todo), "jobs": len(jobs), "families": len(families)}
        await client.check_batch()
        self._grading(ladder)
        # the request-body fields (a grammar, server parameters) change what the student answers: kept as provenance
        run_id = await store.start_run("probe", {**config.__dict__, "source": source, "families": len(families),
                                                 **({"extra_body": endpoint.extra_body} if endpoint.extra_body else {})})
        client.bind_run(run_id)
        status, failed = "interrupted", []
        try:
            jobs = ladder.plan_jobs(families, config, donors)
            with ladder, (progress or _no_progress)(f"probe {config.student}", len(jobs), client) as advance:
                def fail(job) -> None:
                    failed.append(job)
                    advance(job)

                await run_probe(ladder, families, config, client=client, store=store, run_id=run_id, source=source,
                                on_done=advance, on_failed=fail, donors=donors,
                                # in batch mode every job waits in a batch at once
                                workers=len(jobs) if client.batch else None)
            ungraded = await store.rollout_count(run_id=run_id, status=GradeStatus.UNGRADED)
            status = BUDGET_STOPPED if client.budget_stop else FINISHED_WITH_FAILURES if failed or ungraded else "done"
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        return {"run_id": run_id, "families": len(families), **client.usage.as_dict(), "ungraded": ungraded,
                # families the primitive conditions skip for want of a primitive (docs/primitive.md)
                "without_primitive": len(without_primitive(families, config.primitive_fallback))
                if set(config.conditions) & set(PRIMITIVE_CONDITIONS) else 0,
                "budget_stop": client.budget_stop, "batch_rows_submitted": client.batch_rows_submitted,
                "failed_jobs": [{"pid": j.pid, "target": j.target, "k": j.k, "reason": j.reason} for j in failed]}

    # ------------------------------------------------------------------ construction

    async def screen(self, anchor: str | Endpoint, *, source: str = "release", set_name: str | None = None,
                     k: int = 8, max_tokens: int = 4096, rule: str = "default", temperature: float = 1.0,
                     grader: str = "strict", progress: Progress | None = None) -> dict:
        """Anchor screen and structural filter (Section 3): probe the anchor (C1 and Stage 0: ordinary
        cached rollouts) on a roadmap set, then store each family's verdict in the set (default name:
        the anchor). Returns the probe's summary with the set and its verdicts counted."""
        if rule not in RULES:
            raise ExperimentError(f"unknown rule '{rule}'; known: {', '.join(RULES)}")
        endpoint = _endpoint(anchor)
        set_name = set_name or endpoint.model
        summary = await self.probe(endpoint, k=k, conditions=(DIRECT,), stage0=True, max_tokens=max_tokens,
                                   temperature=temperature, grader=grader, source=source, progress=progress)
        families = await self.roadmap_set(source)
        rollouts = await self.store.rollouts(student=endpoint.model, run_id=summary["run_id"])
        verdicts = screen_families(families, collect_results(families, rollouts), set_name=set_name,
                                   anchor=endpoint.model, rule=rule, k=k, max_tokens=max_tokens,
                                   run_id=summary["run_id"])
        for verdict in verdicts:
            await self.store.put_screen_verdict(verdict, wait=False)
        await self.store.flush()
        return {**summary, "set": set_name, "verdicts": dict(Counter(v.verdict for v in verdicts))}

    async def funnel(self, *, set_name: str | None = None, source: str | None = None) -> Funnel:
        """The construction funnel of a screened set (default: the store's only set), or with ``source``
        the compile steps of a teacher's roadmap set before any screen."""
        store = self.store
        if set_name is not None and source is not None:
            raise ExperimentError("--set and --source exclude each other (a set has its own source)")
        if source is not None:  # before any screen: the compile steps, compiled families "not screened"
            verdicts, name = {}, source
        else:
            if set_name is None:  # the store's only set
                sets = await store.screen_sets()
                if len(sets) != 1:
                    raise ExperimentError(f"{store.path} holds {len(sets)} screened sets ({', '.join(sets) or 'none'});"
                                          " name one with --set, or give --source for the compile steps alone")
                set_name = sets[0]
            verdicts = {v.pid: v for v in await self.set_verdicts(set_name)}
            name = next(iter(verdicts.values())).source
        teacher, granularity = parse_roadmap_set(name)
        families = {f.pid: f for f in await store.families(source=teacher, granularity=granularity)}
        fates = []
        for problem in await store.problems("math"):
            attempts = await store.compile_attempts(problem.pid, teacher, granularity=granularity)
            if attempts or problem.pid in families:
                fates.append(fate(problem.pid, attempts, families.get(problem.pid), verdicts.get(problem.pid)))
        # families without a stored problem (imported ones) are candidates too
        seen = {f.pid for f in fates}
        fates += [fate(pid, [], family, verdicts.get(pid)) for pid, family in families.items() if pid not in seen]
        return build_funnel(set_name or "", name, fates)

    async def gap_counts(self, anchors: Sequence[str], models: Sequence[str], *, source: str = "release",
                         k: int = 8, max_tokens: int = 4096):
        """Each model's results on a set from its stored rollouts at K and max_tokens (rollouts of other
        settings left out), then the per-anchor subsets and composition-gap counts (reanchor.gap_counts)."""
        families = await self.roadmap_set(source)
        budget = {r.id for r in await self.store.runs("probe")
                  if isinstance(r.config, dict) and r.config.get("max_tokens") == max_tokens}
        results = {}
        for model in models:
            rollouts = [r for r in await self.store.rollouts(student=model, source=families[0].provenance.roadmap_set)
                        if r.k < k and r.run_id in budget]
            results[model] = collect_results(families, rollouts)
        return _reanchor.gap_counts(results, list(anchors), k)

    # ------------------------------------------------------------------ results

    async def results(self, student: str, *, source: str = "release", use_corrections: bool = False,
                      domain: str = "math") -> tuple[list, list[FamilyResults], dict]:
        """The families of a roadmap set, the student's results on them, and the verdicts they lack
        (ungraded rollouts, failed jobs: in no result)."""
        store, ladder = self.store, self.domain(domain)
        families = await self.domain_families(ladder, source)
        rollout_source = ladder.rollout_source(families[0], source)
        rollouts = await store.rollouts(student=student, source=rollout_source)
        failed = await store.failed_jobs(student=student, source=rollout_source)
        if not rollouts and not failed:
            raise ExperimentError(f"{store.path} holds no rollouts of student '{student}' on families from "
                                  f"'{source}'; run `ladder probe --student {student} --source {source}` first")
        missing = _report.missing_counts([r.target for r in rollouts if not r.verdict.graded], [j.target for j in failed])
        return families, ladder.collect_results(families, rollouts, use_corrections=use_corrections), missing

    async def graders(self, student: str, *, source: str = "release") -> str:
        """The grader (with its version) of a student's math rollouts on a roadmap set: "strict (strict-2)",
        or every one of them joined by " + " when runs were graded differently."""
        families = await self.roadmap_set(source)
        rollouts = await self.store.rollouts(student=student, source=families[0].provenance.roadmap_set)
        runs = {r.id: r for r in await self.store.runs("probe")}
        names = sorted({run_grader(runs[r.run_id].config if r.run_id in runs else None) for r in rollouts})
        return " + ".join(f"{g} ({GRADER_VERSIONS[g]})" for g in names)

    def check_html(self, domain: str = "math") -> None:
        """Refuses the HTML report for a domain whose answers the verifier does not grade."""
        if not self.domain(domain).verifier:
            raise ExperimentError(f"--html shows math roadmap sets; the {domain} ladder has report.md and report.json")

    async def report(self, students: Sequence[str], *, source: str = "release", threshold: int = 1,
                     use_corrections: bool = False, domain: str = "math") -> Report:
        """Outcome and taxonomy tables, controls and CIs of one or two students (Report.summary); a
        family whose reference answer is unusable is listed, never graded."""
        ladder = self.domain(domain)
        loaded = {name: await self.results(name, source=source, use_corrections=use_corrections, domain=domain)
                  for name in students}
        ungradable = {f.pid: why for fams, _, _ in loaded.values() for f in fams
                      if (why := ladder.ungradable(f, use_corrections))}
        results = {name: [r for r in res if r.pid not in ungradable] for name, (_, res, _) in loaded.items()}
        # answers the verifier graded: which grader, and the format audit of their final answers
        graded = ladder.verifier
        return Report(
            source=source, domain=domain, tau=threshold, families=next(iter(loaded.values()))[0], results=results,
            missing={name: r[2] for name, r in loaded.items()}, ungradable=ungradable,
            graders={name: await self.graders(name, source=source) for name in students} if graded else None,
            formats={name: await fmt.format_audit(self.store, name, source) for name in students} if graded else None)

    async def write_report(self, counted: Report, out: str | os.PathLike[str], *, html: bool = False) -> dict:
        """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too);
        returns what report.json holds."""
        if html:
            self.check_html(counted.domain)
        out = Path(out)
        res = _report.write_report(counted.results, out, tau=counted.tau, roadmap_set=counted.source,
                                   graders=counted.graders, ungradable=counted.ungradable, missing=counted.missing,
                                   formats=counted.formats)
        if html:
            records = await _site.read_records(self.store, list(counted.results),
                                               counted.families[0].provenance.roadmap_set)
            _site.write_site(out / "html", res, (out / "report.md").read_text(), counted.families, counted.results,
                            records)
        return res

    async def regrade(self, student: str, *, source: str = "release", domain: str = "math") -> dict:
        """Grade every ungraded rollout of a student on one roadmap set again, from its stored response,
        with the grading options of the run that made it; no call is made."""
        store, ladder = self.store, self.domain(domain)
        families = await self.domain_families(ladder, source)
        by_pid = {f.pid: f for f in families}
        rollout_source = ladder.rollout_source(families[0], source)
        todo = [r for r in await store.rollouts(student=student, source=rollout_source)
                if not r.verdict.graded and r.pid in by_pid]
        configs = {rid: run.config if (run := await store.get_run(rid)) else {} for rid in {r.run_id for r in todo}}
        run_id = await store.start_run("regrade", {"student": student, "source": source, "rollouts": len(todo)})
        status, done = "interrupted", []
        try:
            with self._grading(ladder):
                async def grade(r):
                    cfg = configs[r.run_id]  # the grading options of the run that made it
                    config = ProbeConfig(student=student, use_corrections=cfg.get("use_corrections", False),
                                         grader=cfg.get("grader", "strict"), extended=bool(cfg.get("extended")))
                    return await ladder.grade(Job(by_pid[r.pid], r.target, r.k, []), r.response, config)

                done = await regrade_rollouts(todo, grade, store)
            left = sum(not r.verdict.graded for r in done)
            status = FINISHED_WITH_FAILURES if left else "done"
        finally:
            await store.finish_run(run_id, status)
        return {"run_id": run_id, "regraded": len(done) - left, "still_ungraded": left,
                "accepted": sum(r.verdict.accepted for r in done if r.verdict.graded)}

    async def _compared(self, a: str, b: str, student: str, use_corrections: bool,
                        allow_mixed_graders: bool) -> tuple[dict, tuple[list, list], tuple[list, list]]:
        families_a, results_a, _ = await self.results(student, source=a, use_corrections=use_corrections)
        families_b, results_b, _ = await self.results(student, source=b, use_corrections=use_corrections)
        graded_a, graded_b = await self.graders(student, source=a), await self.graders(student, source=b)
        if graded_a != graded_b and not allow_mixed_graders:
            raise ExperimentError(f"{a} was graded by {graded_a} and {b} by {graded_b}: a difference between them "
                                  "could be the grader's; regrade one, or pass --allow-mixed-graders")
        k = max((len(rolls) for r in results_a + results_b for rolls in r.ladder.values()), default=0)
        result = _compare.compare(families_a, families_b, results_a, results_b,
                                  is_atomic=lambda gold: atomicity_problem(gold) is None, k=k)
        return result, (families_a, families_b), (results_a, results_b)

    async def compare(self, a: str, b: str, student: str, *, use_corrections: bool = False,
                      allow_mixed_graders: bool = False) -> dict:
        """Two teachers or two granularities on the same problems (paper Appendix P); refused when the
        two sets were graded by different graders unless ``allow_mixed_graders``. probe.compare's
        write_compare writes it (write_compare below writes it with its HTML)."""
        return (await self._compared(a, b, student, use_corrections, allow_mixed_graders))[0]

    async def write_compare(self, a: str, b: str, student: str, out: str | os.PathLike[str], *,
                            use_corrections: bool = False, allow_mixed_graders: bool = False,
                            html: bool = False) -> dict:
        """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html
        too); returns the comparison."""
        out = Path(out)
        result, families, results = await self._compared(a, b, student, use_corrections, allow_mixed_graders)
        _compare.write_compare(result, out, name_a=a, name_b=b, student=student)
        if html:
            records = tuple([(await _site.read_records(self.store, [student], fams[0].provenance.roadmap_set))[student]
                             for fams in families])
            _site.write_compare_site(out / "html", result, (out / "compare.md").read_text(), (a, b), student,
                                     families, results, records)
        return result

    async def compare_primitive(self, source: str, student: str, *, threshold: int = 1,
                                use_corrections: bool = False) -> dict:
        """The primitive against the roadmap on one roadmap set: C2-primitive vs C2 for one student
        (docs/primitive.md); refused when no family has both."""
        _, results, _ = await self.results(student, source=source, use_corrections=use_corrections)
        result = primitive_vs_roadmap(results, threshold)
        if not result["n"]:
            raise ExperimentError(f"no family of '{source}' has both C2-primitive and C2 rollouts of {student}; run "
                                  f"`ladder probe --student {student} --source {source} --primitive` first")
        return result

    async def write_primitive_compare(self, source: str, student: str, out: str | os.PathLike[str], *,
                                      threshold: int = 1, use_corrections: bool = False) -> dict:
        """primitive_vs_roadmap.md/.json in ``out`` (compare_primitive); returns the comparison."""
        result = await self.compare_primitive(source, student, threshold=threshold, use_corrections=use_corrections)
        write_primitive_vs_roadmap(result, out, source, student)
        return result

    async def judge_audit(self, judge: str | Endpoint, student: str, sheet: str | os.PathLike[str], *,
                          source: str = "release", n: int = 40, seed: int = 0, max_tokens: int = 4096) -> dict:
        """Judge audit of the grader (paper Appendix V.1): a seeded sample of ``n`` of the student's
        rejected rollouts on a math roadmap set, stratified by rejection reason, graded by the LLM
        ``judge``; the cases it accepts go to the grader-blind CSV ``sheet`` (its key beside it,
        audit.judge.key_path), which is never overwritten. Returns the counts and the calls' usage;
        ``failed`` counts the judge calls that failed for good (a rerun asks them again)."""
        sheet = Path(sheet)
        if sheet.exists():  # it may hold a person's labels
            raise ExperimentError(f"{sheet} exists; a sheet is never overwritten: give another --sheet")
        endpoint, store, domain = _endpoint(judge), self.store, MathDomain()
        families = await self.roadmap_set(source)
        by_pid = {f.pid: f for f in families}
        rollouts = [r for r in await store.rollouts(student=student, source=families[0].provenance.roadmap_set)
                    if r.pid in by_pid]
        sizes, sample = draw(rollouts, n, seed)
        if not sample:
            raise ExperimentError(f"{store.path} holds no rejected rollouts of student '{student}' on roadmap set "
                                  f"'{source}'")
        client = await self.client(endpoint, default_concurrency=8)
        await client.check_batch()
        meta = {"judge": endpoint.model, "prompt": f"judge@{load_prompt('judge').version}", "student": student,
                "source": source, "n": n, "max_tokens": max_tokens, "graded": sum(r.verdict.graded for r in rollouts)}
        run_id = await store.start_run("audit-judge", meta)
        client.bind_run(run_id)
        status = "interrupted"
        try:
            verdicts = await ask_judge(client, domain, by_pid, sample, max_tokens)
            status = FINISHED_WITH_FAILURES if any(v == "failed" for v, _ in verdicts) else "done"
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        cases = write_sheet(sheet, key_path(sheet), domain, by_pid, sizes, sample, verdicts, meta, seed)
        return {"run_id": run_id, "sampled": len(sample), "judge_accepts": cases,
                "failed": sum(v == "failed" for v, _ in verdicts),
                "unreadable": sum(v == "unreadable" for v, _ in verdicts), **client.usage.as_dict(),
                "batch_rows_submitted": client.batch_rows_submitted}

    async def batches(self, *, cancel: bool = False, api_key_env: str | None = None) -> tuple[list[BatchRecord], list[str]]:
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

    async def runs(self) -> list[RunRecord]:
        """The store's runs with their status (running, done, interrupted), tokens and cost."""
        return await self.store.runs()


def estimate(client: Client, requests: list, *, calls: int | None = None) -> dict:
    """Tokens and cost of ``requests`` (``calls`` of them, when they stand for more): prompts
    estimated at 4 characters a token, answers at their whole max_tokens (an upper bound)."""
    n = len(requests) if calls is None else calls
    scale = n / len(requests) if requests else 0.0
    tokens_in = round(scale * sum(client.prompt_tokens(r) for r in requests))
    tokens_out = round(scale * sum(int(r.params.get("max_tokens") or 0) for r in requests))
    online, batch = (client.prices.cost(client.name, tokens_in, tokens_out, batch=b) for b in (False, True))
    return {"dry_run": True, "calls": n, "tokens_in": tokens_in, "tokens_out_max": tokens_out,
            "cost_usd_max": online, "batch_cost_usd_max": batch, "prices": client.prices.name}


class SyncExperiment:
    """An Experiment whose methods block: ``ex.probe(...)`` returns the summary.

    Every call runs on the experiment's own event loop, in a worker thread that lives as long as the
    experiment: the store and its writer stay on one loop, and a call made where a loop already runs
    (a Jupyter cell, a coroutine) neither nests loops nor blocks on its own loop. Use it as
    ``with SyncExperiment(path) as ex:``, or call close()."""

    def __init__(self, store_path: str | os.PathLike[str] = "ladder.sqlite", **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="oracleladder-experiment", daemon=True)
        self._thread.start()
        self._experiment = Experiment(store_path, **options)
        try:
            self._call(self._experiment.__aenter__())
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Any) -> Any:
        ended = threading.Event()

        async def guarded() -> Any:
            try:
                return await coro
            finally:
                ended.set()

        future: Future = asyncio.run_coroutine_threadsafe(guarded(), self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:  # stop the call, and wait for its cleanup (finish_run, aclose) to end
            future.cancel()
            ended.wait()
            raise

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._experiment, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr
        return lambda *args, **kwargs: self._call(attr(*args, **kwargs))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._experiment.__aexit__(None, None, None))
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncExperiment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
