"""The `ladder` command line: one subcommand per stage of the pipeline."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import signal
import sqlite3
import tempfile
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.markup import escape
from rich.text import Text

from .audit.cli import app as audit_app, read_format_audit
from .clients import ConfigurationError, ProviderError, load_prices
from .clients.batch import ENDED, make_batch_api, make_batch_client
from .clients.errors import endpoint_failure
from .schemas import (CONDITION_NAMES, PRIMITIVE_CONDITIONS, Family, parse_condition, parse_roadmap_set,
                      to_released)
from .schemas.jsonl import InputError, read_unique, write_jsonl
from .schemas.types import GradeStatus
from .store import Store, StoreError
from .viewer.serve import serve

# The project's own errors carry a one-line message that says what to do: printed as that line
# (with --debug, with its traceback).
USER_ERRORS = (InputError, StoreError, ConfigurationError, ProviderError, sqlite3.Error)


class _Ladder(TyperGroup):
    def invoke(self, ctx: typer.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:  # a subcommand's option refused: one line, not a panel
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx else ""
            _fail(exc.format_message() + where)
        except USER_ERRORS as exc:
            if ctx.meta.get("debug"):
                raise
            _fail(f"store: {exc}" if isinstance(exc, sqlite3.Error) else str(exc),
                  code=2 if isinstance(exc, InputError) else 1)


app = typer.Typer(cls=_Ladder, add_completion=False, no_args_is_help=True,
                  help="OracleLadder: where does LLM reasoning fail?")
app.add_typer(audit_app, name="audit")
console = Console(stderr=True)


@app.callback()
def _options(ctx: typer.Context,
             debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")] = False) -> None:
    ctx.meta["debug"] = debug


def _positive(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} is not greater than 0")
    return value


class OnDuplicate(str, Enum):
    error = "error"
    keep_first = "keep-first"
    keep_last = "keep-last"


StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of this experiment.")]
OnDuplicateOpt = Annotated[OnDuplicate, typer.Option(
    "--on-duplicate", help="A pid repeated in the input file: an error naming both lines, or keep its first or last record.")]
DEFAULT_STORE = Path("ladder.sqlite")
DEMO_FAMILIES = resources.files("oracleladder.data") / "families_demo.jsonl"


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _explain(error: BaseException, model: str, base_urls: list[str] | None, options: dict) -> str:
    """One line for a failed call to the endpoint of ``model`` (clients.errors.explain)."""
    from .clients.errors import explain
    from .clients.providers import key_env_for, parse_model

    provider = parse_model(model)[0]
    base_url = base_urls[0] if base_urls else None
    return explain(error, provider=provider, base_url=base_url,
                   key_env=key_env_for(provider, base_url, options.get("api_key_env")))


def _run(coro, store: Path, endpoint: tuple[str, list[str] | None, dict] | None = None):
    """Run a command's coroutine; Ctrl-C stops it with every finished result kept in the store. A
    call that failed for good ends it with one line on the ``endpoint`` (model, base URL, options)."""
    from .clients import ProviderError

    try:
        return asyncio.run(coro)
    except ProviderError as exc:
        if endpoint is None:
            raise
        _fail(_explain(exc, *endpoint), 1)
    except KeyboardInterrupt:
        # Another Ctrl-C (a terminal sends one to the verifier workers too) while the process winds
        # down must still end it with 130: while threads are joined it exits at once, and from the
        # atexit hooks on it is ignored, since Python restores SIGINT's default (death by signal,
        # -2) for the last steps of its shutdown.
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)
        console.print(f"interrupted: everything finished so far is kept in {store}; "
                      "rerun the same command to resume (stored calls are not asked again)",
                      soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(130) from None


def _load_families(path: Path, on_duplicate: OnDuplicate) -> list[Family]:
    # one family per (pid, granularity): what the store keeps apart
    return read_unique(path, Family, on_duplicate.value, key=lambda f: (f.pid, f.provenance.granularity))


def _reading(path: Path):  # type: ignore[no-untyped-def]
    """Open a store for a command that only reads it: read-only where it cannot be written."""
    writable = os.access(path, os.W_OK) and os.access(path.absolute().parent, os.W_OK)
    return Store.open(path, readonly=not writable)


async def _import(path: Path, store_path: Path, source: str, on_duplicate: OnDuplicate) -> int:
    families = _load_families(path, on_duplicate)
    store = await Store.open(store_path)
    try:
        for family in families:
            family.provenance.source = source
            await store.put_family(family)
    finally:
        await store.close()
    return len(families)


@app.command("import")
def import_(
    families: Annotated[Path, typer.Argument(help="Families in the released OracleLadder record format.")],
    store: StoreOpt = DEFAULT_STORE,
    source: Annotated[str, typer.Option(help="Name the families are filed under.")] = "release",
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
) -> None:
    """Import released-format milestone families into the store."""
    n = asyncio.run(_import(families, store, source, on_duplicate))
    console.print(f"imported {n} families from {families} into {store} (source '{source}')")


async def _export(out: Path, store_path: Path, teacher: str | None, set_name: str | None = None) -> int:
    store = await _reading(store_path)
    try:
        if set_name is None:
            families = await store.families(source=teacher)
        else:
            from .construction.funnel import final_set

            verdicts = await _set_verdicts(store, set_name)
            families = final_set(await _roadmap_set(store, verdicts[0].source), verdicts)
    finally:
        await store.close()
    return write_jsonl(out, (to_released(f) for f in families))


async def _set_verdicts(store, set_name: str) -> list:
    verdicts = await store.screen_verdicts(set_name)
    if not verdicts:
        known = ", ".join(await store.screen_sets()) or "none"
        _fail(f"{store.path} holds no screened set '{set_name}' (sets: {known}); run `ladder screen` first")
    return verdicts


@app.command()
def export(
    out: Annotated[Path, typer.Option("--out", help="JSONL file to write.")],
    store: StoreOpt = DEFAULT_STORE,
    teacher: Annotated[Optional[str], typer.Option(help="Only families from this source/teacher.")] = None,
    set_name: Annotated[Optional[str], typer.Option("--set", help="Only the final set of `ladder screen --set NAME`, with pre_train_phat the anchor's Stage 0 solve rate.")] = None,
) -> None:
    """Export families in the released OracleLadder record format."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    if set_name is not None and teacher is not None:
        _fail("--set and --teacher exclude each other (a set has its own source)")
    n = asyncio.run(_export(out, store, teacher, set_name))
    console.print(f"wrote {n} families to {out}")


GraderOpt = Annotated[str, typer.Option("--grader", help="paper (the release's default cascade, for tables set beside "
                                                          "the paper's), strict (default) or extended.")]


def _grader(grader: str, extended: bool) -> str:  # type: ignore[return]
    from .verify import grader_name

    try:
        return grader_name(grader, extended)
    except ValueError as exc:
        _fail(str(exc))  # exits


@app.command()
def verify(
    gold: Annotated[str, typer.Option("--gold", help="Gold answer.")],
    response: Annotated[str, typer.Option("--response", help="Student response (its last \\boxed{} is graded).")],
    grader: GraderOpt = "strict",
    extended: Annotated[bool, typer.Option(help="Same as --grader extended.")] = False,
    problem: Annotated[str, typer.Option(help="Problem text (lets extended mode read MCQ options).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Grade one response against one gold answer."""
    from .verify import VerifierUnavailable, verify as run_verify

    try:
        verdict = run_verify(response, gold, grader=_grader(grader, extended), problem=problem)
    except VerifierUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({"label": verdict.label.value, "reason": verdict.reason, "extracted": verdict.extracted,
                               "status": verdict.status.value}))
    else:
        typer.echo(f"{verdict.label.value}: {verdict.reason}")


BaseUrlOpt = Annotated[Optional[list[str]], typer.Option("--base-url", metavar="URL", help="Any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp). Repeat it for replicas of one model: each takes --concurrency calls, the least busy gets the next, one that fails is cooled down.")]
ConcurrencyOpt = Annotated[Optional[int], typer.Option(min=1, help="Calls in flight at once, across all workers (default: what a --base-url server says it runs at once, llama.cpp's slots; else 16 for compile, 64 for probe).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds one request may take; then it is cut off and retried.")]
MaxCooldownOpt = Annotated[float, typer.Option("--max-cooldown", min=0, help="Longest wait, in seconds, after a 429 or between retries, whatever Retry-After asks.")]
RpmOpt = Annotated[Optional[float], typer.Option(callback=_positive, help="Requests-per-minute limit.")]
TpmOpt = Annotated[Optional[float], typer.Option(callback=_positive, help="Tokens-per-minute limit.")]
KOpt = Annotated[int, typer.Option("--k", min=1, help="Attempts per milestone and per condition.")]
DomainOpt = Annotated[str, typer.Option(help="math, code (families compiled with --domain code), or another registered domain (docs/domains.md).")]
SourceOpt = Annotated[str, typer.Option(help="Which roadmap set: 'release', a teacher model string, or TEACHER@coarse|fine.")]


async def _roadmap_set(store, name: str) -> list[Family]:
    """The families of one roadmap set, refusing an empty or unknown set by name."""
    from .domains.math import roadmap_set

    return await roadmap_set(store, name)


ParamOpt = Annotated[Optional[list[str]], typer.Option("--param", help="A server parameter NAME=VALUE for the request body's top level (VALUE is JSON, else a string), e.g. top_k=20; repeat the option. Part of each call's cache key.")]
ExtraBodyOpt = Annotated[Optional[str], typer.Option("--extra-body", help="A JSON object merged into the request body's top level, e.g. '{\"chat_template_kwargs\": {\"enable_thinking\": false}}'. Part of each call's cache key.")]
ApiKeyEnvOpt = Annotated[Optional[str], typer.Option("--api-key-env", help="The environment variable holding this endpoint's key. OPENAI_API_KEY / ANTHROPIC_API_KEY go only to api.openai.com / api.anthropic.com unless named here; a server without a key gets no Authorization header.")]
ModelNameOpt = Annotated[Optional[str], typer.Option("--model-name", help="The model name the requests carry (a server's served name); default: the part after provider/.")]


def _client_options(params: list[str] | None, extra_body: str | None, api_key_env: str | None,
                    model_name: str | None, **more: object) -> dict:
    """make_client's keywords from the endpoint options: --param and --extra-body become the
    client's extra_body (top-level body fields, --param winning)."""
    body: dict = {}
    if extra_body:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            _fail(f"--extra-body is not JSON: {exc}")
        if not isinstance(body, dict):
            _fail("--extra-body must be a JSON object, e.g. '{\"top_k\": 20}'")
    for item in params or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            _fail(f"--param {item!r}: expected NAME=VALUE, e.g. --param top_k=20")
        try:
            body[name.strip()] = json.loads(raw)
        except ValueError:
            body[name.strip()] = raw  # not JSON: the string itself
    return {"extra_body": body, "api_key_env": api_key_env, "model_name": model_name, **more}


def _client(model: str, store: object, base_url: list[str] | None, concurrency: int | list[int],
            rpm: float | None, tpm: float | None, **client_opts: Any):
    from .clients import ConfigurationError, make_client

    batch = client_opts.pop("batch", None)  # --batch: the batch API's timing, {"quiet": s, "poll": s}
    try:
        if batch is not None:
            return make_batch_client(model, cache=store, base_url=base_url, **batch, **client_opts)  # no rate limits: every call waits in a batch
        return make_client(model, base_url=base_url, cache=store, concurrency=concurrency, rpm=rpm, tpm=tpm,
                           **client_opts)
    except ConfigurationError as exc:
        _fail(str(exc))
        raise


async def _concurrency(given: int | None, base_urls: list[str] | None, default: int) -> int | list[int]:
    """--concurrency, else each server's own slot count where it says (a small server swamped with
    queued requests times them out), else ``default``; one per replica when there are several."""
    from .clients.providers import server_slots

    if given is not None:
        return given
    per_replica = []
    for url in base_urls or []:
        slots = await server_slots(url)
        if slots is not None:
            console.print(f"{url} runs {slots} request(s) at once (its /props): --concurrency {slots}",
                          soft_wrap=True, highlight=False, markup=False)
        per_replica.append(slots or default)
    return per_replica[0] if len(per_replica) == 1 else per_replica or default


async def _served_name(client, base_urls: list[str] | None, options: dict[str, Any]) -> None:
    """Without --model-name, a server listing one model is asked for it by its served name."""
    if not base_urls or options.get("model_name"):
        return
    name = await client.use_served_model()
    if name is not None:
        console.print(f"{base_urls[0]} serves one model, {name}: the requests carry that name "
                      "(--model-name NAME to choose)", soft_wrap=True, highlight=False, markup=False)


class _SpendColumn(ProgressColumn):
    """A task's spend so far (its ``spend`` field), when it has one."""

    def render(self, task: Any) -> Text:
        return Text(task.fields.get("spend", ""))


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(), _SpendColumn(), console=console,
    )


def _spend(client) -> str:
    """What a client's run has cost so far, for the progress bar."""
    cost = client.usage.cost_usd
    spent = "cost unknown" if cost is None else f"${cost:.4f}"
    return spent if client.max_cost is None else f"{spent} of ${client.max_cost:g}"


def _ticker(progress: Progress, task: Any, client) -> Any:
    """An on_done callback: one more done, and the spend now."""
    return lambda _: progress.update(task, advance=1, spend=_spend(client))


PricesOpt = Annotated[Optional[Path], typer.Option("--prices", metavar="FILE", help="A price table (JSON, the format of oracleladder/data/prices.json) whose models override the package's.")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=_positive, help="Stop cleanly, keeping everything finished, before spend plus the calls in flight (at their whole --max-tokens) could pass USD; rerun to resume.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say how many calls the run would make after the cache, and their tokens and cost (online and batch); make none.")]
BUDGET_STOPPED = "stopped_at_budget"  # a run's status when --max-cost stopped it
BatchOpt = Annotated[bool, typer.Option("--batch", help="Send the calls through the provider's batch API (openai/ and anthropic/ models; half the online price, answers within 24 h): batches logged in the store, a rerun reads the batches in flight instead of submitting again. See `ladder batches`.")]
BatchPollOpt = Annotated[float, typer.Option("--batch-poll", metavar="SECONDS", min=0.001, help="With --batch: the first wait between polls of a batch; it grows 1.5x a poll, up to 5 minutes.")]
BatchQuietOpt = Annotated[float, typer.Option("--batch-quiet", metavar="SECONDS", min=0.0, help="With --batch: calls are submitted once none has come for this long (all first attempts go in one batch).")]


def _batch_options(batch: bool, poll: float, quiet: float) -> dict[str, Any]:
    """The client options of --batch (none without it)."""
    return {"batch": {"poll": poll, "quiet": quiet}} if batch else {}


async def _check_batch(client) -> None:
    """With --batch, fail in one line at once if the endpoint has no batch API."""
    if client.batch:
        await client.provider.api.check()


def _show_batches(progress: Progress, client, run_id: str) -> None:
    """With --batch, one line per batch on the progress display: the provider's state and counts; its
    bar fills as its results are stored (not while the provider still finalizes them)."""
    if not client.batch:
        return
    tasks: dict[str, Any] = {}

    def show(view) -> None:
        what = f"batch {view.id}: {view.state}, {view.succeeded + view.failed} of {view.requests} done at the provider"
        if view.id not in tasks:
            tasks[view.id] = progress.add_task(what, total=view.requests, spend="")
        progress.update(tasks[view.id], description=what, completed=view.settled)

    client.provider.on_status = show
    client.provider.run_id = run_id


def _batch_rows(client) -> int | None:
    """Rows this run submitted to a batch API (None without --batch)."""
    return client.provider.submitted if client.batch else None


def _batch_rows_said(summary: dict) -> str:
    n = summary.get("batch_rows_submitted")
    return "" if n is None else f" ({n} batch rows submitted)"


def _estimate(client, requests: list, *, calls: int | None = None) -> dict:
    """Tokens and cost of ``requests`` (``calls`` of them, when they stand for more): prompts
    estimated at 4 characters a token, answers at their whole max_tokens (an upper bound)."""
    n = len(requests) if calls is None else calls
    scale = n / len(requests) if requests else 0.0
    tokens_in = round(scale * sum(client._prompt_tokens(r) for r in requests))
    tokens_out = round(scale * sum(int(r.params.get("max_tokens") or 0) for r in requests))
    online, batch = (client.prices.cost(client.name, tokens_in, tokens_out, batch=b) for b in (False, True))
    return {"dry_run": True, "calls": n, "tokens_in": tokens_in, "tokens_out_max": tokens_out,
            "cost_usd_max": online, "batch_cost_usd_max": batch, "prices": client.prices.name}


def _say_estimate(e: dict, what: str) -> None:
    def usd(x: float | None) -> str:
        return "unknown (no price; see --prices)" if x is None else f"${x:.4f}"

    _say(f"dry run: {what}; about {e['tokens_in']} prompt tokens, at most {e['tokens_out_max']} answer tokens; "
         f"cost at most {usd(e['cost_usd_max'])} online, {usd(e['batch_cost_usd_max'])} in batch "
         f"({e['prices']}); nothing was sent")


def _say_cost(summary: dict) -> str:
    cost = "unknown" if summary["cost_usd"] is None else f"${summary['cost_usd']:.4f}"
    return f"cost {cost} ({summary['prices']})"


def _say_budget(summary: dict) -> None:
    if summary.get("budget_stop"):
        _say(f"{summary['budget_stop']}: everything finished is kept; rerun the same command (with a larger "
             "--max-cost) to resume (stored calls are not asked again)")


# the run finished, but some of its work has no result: probe jobs whose call failed or whose answer could
# not be graded, problems compile could not finish for a provider failure; a rerun picks them up
EXIT_INCOMPLETE = 3
FINISHED_WITH_FAILURES = "done_with_failures"  # a run's status when EXIT_INCOMPLETE is its exit code


async def _probe(config, store_path: Path, source: str, base_url: list[str] | None,
                 concurrency: int | None, rpm: float | None, tpm: float | None, limit: int | None,
                 client_opts: dict[str, Any], dry_run: bool = False, domain: str = "math") -> dict:
    """Probe the families of one roadmap set of a domain. ``limit``: probe the first N families; the
    controls still draw from the whole set. ``dry_run``: plan the jobs and return the calls the run
    would make after the cache, with their estimate."""
    from .domains import get_domain
    from .probe.runner import run_probe, uncached_calls

    from .probe.primitive import without_primitive

    ladder = get_domain(domain)
    store = await Store.open(store_path)
    try:
        donors = await ladder.load_families(store, source)
        families = donors[:limit]
        if ("C2_primitive_random" in config.conditions
                and len(donors) - len(without_primitive(donors, config.primitive_fallback)) == 1):
            _fail(f"C2-primitive-random needs another family with a primitive in '{source}', and only one has "
                  "one: `ladder compile --primitives-only` writes more (or --primitive-fallback)")
        concurrency = await _concurrency(concurrency, base_url, 64)
        client = _client(config.student, store, base_url, concurrency, rpm, tpm, **client_opts)
        await _served_name(client, base_url, client_opts)
        if dry_run:
            jobs = ladder.plan_jobs(families, config, donors)
            todo = await uncached_calls(jobs, client=client, store=store, temperature=config.temperature,
                                        max_tokens=config.max_tokens)
            await client.aclose()
            return {**_estimate(client, todo), "jobs": len(jobs), "families": len(families)}
        await _check_batch(client)
        run_id = await store.start_run("probe", {**config.__dict__, "source": source, "families": len(families)})
        status, failed = "interrupted", []
        try:
            with ladder, _progress() as progress:
                jobs = ladder.plan_jobs(families, config, donors)
                task = progress.add_task(f"probe {config.student}", total=len(jobs), spend=_spend(client))
                advance = _ticker(progress, task, client)
                _show_batches(progress, client, run_id)
                workers = len(jobs) if client.batch else None  # in batch mode every job waits in a batch at once

                def fail(job) -> None:
                    failed.append(job)
                    advance(job)

                await run_probe(ladder, families, config, client=client, store=store, run_id=run_id, source=source,
                                on_done=advance, on_failed=fail, donors=donors, workers=workers)
            ungraded = await store.rollout_count(run_id=run_id, status=GradeStatus.UNGRADED)
            status = BUDGET_STOPPED if client.budget_stop else FINISHED_WITH_FAILURES if failed or ungraded else "done"
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        return {"run_id": run_id, "families": len(families), **client.usage.as_dict(), "ungraded": ungraded,
                # families the primitive conditions skip for want of a primitive (docs/primitive.md)
                "without_primitive": len(without_primitive(families, config.primitive_fallback))
                if set(config.conditions) & set(PRIMITIVE_CONDITIONS) else 0,
                "budget_stop": client.budget_stop, "batch_rows_submitted": _batch_rows(client),
                "failed_jobs": [{"pid": j.pid, "target": j.target, "k": j.k, "reason": j.reason} for j in failed]}
    finally:
        await store.close()


def _say(text: str) -> None:
    console.print(text, soft_wrap=True, highlight=False, markup=False)


def _print_failed_jobs(failed: list[dict], ungraded: int, student: str, source: str) -> None:
    """The jobs a run could not finish, grouped by reason, and what to do about them."""
    by_reason: dict[str, list[dict]] = {}
    for job in failed:
        by_reason.setdefault(job["reason"], []).append(job)
    if failed:
        _say(f"{len(failed)} jobs failed (no answer; rerun the same command to ask them again):")
    for reason, jobs in by_reason.items():
        _say(f"  {len(jobs)} x {reason}")
        for job in jobs[:20]:
            _say(f"    pid {job['pid']} target {job['target']} k {job['k']}")
        if len(jobs) > 20:
            _say(f"    ... and {len(jobs) - 20} more (`ladder report` counts them per condition)")
    if ungraded:
        _say(f"{ungraded} answers could not be graded (kept, in no table): "
            f"`ladder regrade --student {student} --source {source}` grades them again without a call")


async def _compile(problems_path: Path, teacher: str, store_path: Path, granularity: str, max_attempts: int,
                   max_tokens: int, domain: str,
                   concurrency: int | None, base_url: list[str] | None, rpm: float | None, tpm: float | None,
                   independent_solve: bool, client_opts: dict[str, Any], on_duplicate: OnDuplicate,
                   dry_run: bool = False, fields: list[str] | None = None) -> dict:
    from collections import Counter

    from .compiler.loop import Compiler
    from .compiler.workers import BUDGET_CHECK
    from .domains import Settings, get_domain

    ladder = get_domain(domain, Settings(granularity=granularity, independent_solve=independent_solve,
                                         fields=tuple(fields or ())))
    problems = ladder.read_problems(problems_path, on_duplicate.value)
    store = await Store.open(store_path)
    try:
        concurrency = await _concurrency(concurrency, base_url, 16)
        client = _client(teacher, store, base_url, concurrency, rpm, tpm, **client_opts)
        await _served_name(client, base_url, client_opts)
        if dry_run:
            todo = [p for p in problems
                    if not any(a.passed for a in await store.compile_attempts(p.pid, client.name, ladder.granularity))]
            firsts = [client.request(ladder.teacher_messages(p)[0], temperature=0.0, max_tokens=max_tokens) for p in todo]
            await client.aclose()
            return {**_estimate(client, firsts), "problems": len(problems)}
        await _check_batch(client)
        run_id = await store.start_run("compile", {"teacher": teacher, "granularity": granularity,
                                                   "max_attempts": max_attempts, "problems": str(problems_path)})
        status = "interrupted"
        try:
            with ladder, _progress() as progress:
                task = progress.add_task(f"compile with {teacher}", total=len(problems), spend=_spend(client))
                _show_batches(progress, client, run_id)
                compiler = Compiler(client, store, ladder, max_attempts=max_attempts, max_tokens=max_tokens)
                # in batch mode every problem is under way at once: its first attempts go in one batch
                outcomes = await compiler.compile_all(problems, on_done=_ticker(progress, task, client),
                                                      concurrency=len(problems) if client.batch else None)
            status = (BUDGET_STOPPED if client.budget_stop else
                      FINISHED_WITH_FAILURES if any(o.infrastructure_failure for o in outcomes) else "done")
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
    finally:
        await store.close()
    failed = {o.pid: [f"{e.check}: {e.reason}" for e in o.errors] for o in outcomes
              if not o.ok and not o.infrastructure_failure}
    infra_failed = {o.pid: f"{o.errors[0].check} failure: {o.errors[0].reason}"
                    for o in outcomes if o.infrastructure_failure and o.errors[0].check != BUDGET_CHECK}
    # an endpoint that takes no request at all (no connection, a refused key, a wrong URL) is said in one
    # line; other failures are the problems' own, counted above, and a rerun retries them
    every_call_failed = (client.usage.successes == 0 and client.last_error is not None
                         and endpoint_failure(client.last_error))
    return {
        "all_failed": _explain(client.last_error, teacher, base_url, client_opts) if every_call_failed else None,
        "run_id": run_id, "compiled": sum(o.ok for o in outcomes), "failed": len(failed),
        "infrastructure_failures": len(infra_failed),
        "attempts_per_family": dict(sorted(Counter(o.attempts for o in outcomes if o.ok).items())),
        "failed_checks": dict(Counter(e.split(":")[0] for errs in failed.values() for e in errs)),
        "failed_why": failed, "infrastructure_failed_why": infra_failed, **client.usage.as_dict(),
        "budget_stop": client.budget_stop, "batch_rows_submitted": _batch_rows(client), "not_compiled_for_budget": sum(o.infrastructure_failure for o in outcomes)
        - len(infra_failed),
    }


async def _compile_primitives(teacher: str, store_path: Path, source: str, max_attempts: int, max_tokens: int,
                              concurrency: int | None, base_url: list[str] | None, rpm: float | None,
                              tpm: float | None, client_opts: dict[str, Any]) -> dict:
    """`--primitives-only`: a primitive for each family of ``source`` that has none (docs/primitive.md)."""
    from .compiler.primitive import PrimitiveCompiler
    from .verify import VerifierPool

    store = await Store.open(store_path)
    try:
        families = await _roadmap_set(store, source)
        todo = [f for f in families if f.primitive is None]
        concurrency = await _concurrency(concurrency, base_url, 16)
        client = _client(teacher, store, base_url, concurrency, rpm, tpm, **client_opts)
        await _served_name(client, base_url, client_opts)
        run_id = await store.start_run("compile-primitives", {"teacher": teacher, "source": source,
                                                              "max_attempts": max_attempts, "families": len(todo)})
        status = "interrupted"
        try:
            with VerifierPool() as pool, _progress() as progress:
                task = progress.add_task(f"primitives with {teacher}", total=len(todo), spend=_spend(client))
                compiler = PrimitiveCompiler(client, store, pool, max_attempts=max_attempts, max_tokens=max_tokens)
                outcomes = await compiler.compile_all(todo, on_done=_ticker(progress, task, client))
            status = (BUDGET_STOPPED if client.budget_stop else
                      FINISHED_WITH_FAILURES if any(o.infrastructure_failure for o in outcomes) else "done")
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
    finally:
        await store.close()
    return {"run_id": run_id, "families": len(families), "had_primitive": len(families) - len(todo),
            "compiled": sum(o.ok for o in outcomes),
            "failed_why": {o.pid: f"{o.errors[0].check}: {o.errors[0].reason}" for o in outcomes
                           if not o.ok and o.errors},
            "infrastructure_failures": sum(o.infrastructure_failure for o in outcomes),
            **client.usage.as_dict(), "budget_stop": client.budget_stop}


def _say_primitives(summary: dict) -> None:
    _say(f"primitives: {summary['compiled']} written, {len(summary['failed_why'])} failed, "
         f"{summary['had_primitive']} of {summary['families']} families already had one; "
         f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out; {_say_cost(summary)}")
    for pid, why in summary["failed_why"].items():
        _say(f"  failed {pid}: {why}")


@app.command()
def compile(  # noqa: A001 - the CLI verb of ARCHITECTURE.md
    teacher: Annotated[str, typer.Option("--teacher", help="provider/model of the teacher, e.g. openai/gpt-5.4.")],
    problems: Annotated[Optional[Path], typer.Argument(help="Math: a JSONL, CSV or Parquet pool with NuminaMath's, MATH's (answer boxed in the solution) or AIME-style field names (pid/id/unique_id, problem, answer, solution); see --field. Code: humaneval[:N] or a JSONL of stdin/stdout problems. Not with --primitives-only.")] = None,
    granularity: Annotated[str, typer.Option(help="coarse (3 milestones), default, or fine (8-10).")] = "default",
    domain: Annotated[str, typer.Option(help="math, code, or another registered domain (docs/domains.md).")] = "math",
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Teacher attempts per problem.")] = 3,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each teacher answer (a reasoning model's reasoning counts in it).")] = 4096,
    independent_solve: Annotated[bool, typer.Option("--independent-solve/--no-independent-solve", help="Check each milestone by a separate solve of its prompt alone.")] = True,
    base_url: BaseUrlOpt = None,
    structured: Annotated[str, typer.Option("--structured", help="How the teacher's JSON is asked for: json_schema (a JSON-schema response_format), json_object (a JSON-object response_format with the schema: llama.cpp), tools (a forced tool call), md_json (JSON asked for in the prompt), or auto: the strongest the server takes, learned from its rejections.")] = "auto",
    param: ParamOpt = None,
    extra_body: ExtraBodyOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    model_name: ModelNameOpt = None,
    concurrency: ConcurrencyOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 120.0,
    max_cooldown: MaxCooldownOpt = 120.0,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
    prices: PricesOpt = None,
    max_cost: MaxCostOpt = None,
    dry_run: DryRunOpt = False,
    batch: BatchOpt = False,
    batch_poll: BatchPollOpt = 5.0,
    batch_quiet: BatchQuietOpt = 2.0,
    field: Annotated[Optional[list[str]], typer.Option("--field", metavar="NAME=COLUMN", help="The pool's column for one of pid, problem, answer, solution, e.g. problem=question; repeat the option.")] = None,
    primitives_only: Annotated[bool, typer.Option("--primitives-only", help="Write only the primitive (the key idea, docs/primitive.md) of each family of --source that has none, from its problem and roadmap; takes no PROBLEMS.")] = False,
    source: Annotated[str, typer.Option(help="With --primitives-only: the roadmap set whose families get primitives.")] = "release",
) -> None:
    """Compile milestone families with a teacher: validators, retry on error, every attempt stored."""
    if primitives_only:
        if problems is not None or domain != "math" or dry_run:
            _fail("--primitives-only takes no PROBLEMS (it reads the families of --source), math only, no --dry-run")
        opts = _client_options(param, extra_body, api_key_env, model_name, structured=structured, timeout=timeout,
                               max_cooldown=max_cooldown, prices=load_prices(prices), max_cost=max_cost)
        result = _run(_compile_primitives(teacher, store, source, max_attempts, max_tokens, concurrency, base_url,
                                          rpm, tpm, opts), store, (teacher, base_url, opts))
        if as_json:
            typer.echo(json.dumps(result))
        else:
            _say_primitives(result)
        if result["infrastructure_failures"] or result["budget_stop"]:
            raise typer.Exit(EXIT_INCOMPLETE)
        return
    if problems is None:
        _fail("missing PROBLEMS: a pool of problems to compile (or --primitives-only)")
    if granularity not in ("coarse", "default", "fine"):
        _fail(f"unknown granularity '{granularity}'; known: coarse, default, fine")
    from .domains import get_domain

    get_domain(domain)  # an unknown name fails here, before the store is touched
    client_opts = _client_options(param, extra_body, api_key_env, model_name, structured=structured,
                                  timeout=timeout, max_cooldown=max_cooldown, prices=load_prices(prices),
                                  max_cost=max_cost, **_batch_options(batch, batch_poll, batch_quiet))
    summary = _run(_compile(problems, teacher, store, granularity, max_attempts, max_tokens, domain, concurrency,
                            base_url, rpm, tpm, independent_solve, client_opts, on_duplicate, dry_run, field), store,
                   (teacher, base_url, client_opts))
    if as_json:
        typer.echo(json.dumps(summary))
    if dry_run:
        if not as_json:
            _say_estimate(summary, f"about {summary['calls']} teacher calls: a first attempt for each of the "
                                   f"{summary['calls']} of {summary['problems']} problems not yet compiled by this "
                                   "teacher (re-asks and independent solves add more; cached attempts cost nothing)")
        return
    if summary["all_failed"]:
        _fail(f"every teacher call failed: {summary['all_failed']}", 1)
    if not as_json:
        console.print(f"compiled {summary['compiled']}, failed {summary['failed']}, infrastructure failures "
                      f"{summary['infrastructure_failures']}; attempts per family {summary['attempts_per_family']}; "
                      f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out; {_say_cost(summary)}"
                      f"{_timeouts(summary)}", soft_wrap=True, highlight=False, markup=False)
        for pid, errs in summary["failed_why"].items():
            console.print(f"  failed {pid}: {errs[0] if errs else ''}", soft_wrap=True, highlight=False, markup=False)
        for pid, reason in summary["infrastructure_failed_why"].items():
            _say(f"  {pid}: {reason}")
        if summary["infrastructure_failures"]:
            _say("a provider or grader failure says nothing about the roadmap: rerun the same command to compile "
                 "those problems again (stored calls are not asked again)")
    _say_budget(summary)
    if summary["infrastructure_failures"] or summary["budget_stop"]:
        raise typer.Exit(EXIT_INCOMPLETE)


def _timeouts(summary: dict) -> str:
    n = summary["timeouts"]
    return f"; {n} request(s) timed out (see --timeout, --concurrency)" if n else ""


@app.command()
def check(
    families: Annotated[Path, typer.Argument(help="Families in the released record format.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per family, then the totals.")] = False,
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
) -> None:
    """Run every deterministic validator on existing families."""
    from .validators import check_family, family_leak_level, summarize

    loaded = _load_families(families, on_duplicate)
    reports = [check_family(f, use_corrections=use_corrections) for f in loaded]
    totals = summarize(reports, loaded, use_corrections=use_corrections)
    if as_json:
        for family, report in zip(loaded, reports):
            typer.echo(json.dumps({
                "pid": report.pid, "passed": report.passed,
                "leak_level": family_leak_level(family, use_corrections=use_corrections),
                "checks": [c.model_dump(mode="json") for c in report.checks],
            }))
        typer.echo(json.dumps({"totals": totals}))
        return
    for report in reports:
        for c in report.failures():
            # numbered from 1 like the reasons ("duplicates milestone 1's gold"); m<i> is its record id
            where = f"milestone {c.milestone + 1} (m{c.milestone})" if c.milestone is not None else "family"
            console.print(f"{report.pid} {where} [{c.check}] {c.reason}", soft_wrap=True, highlight=False, markup=False)
    console.print_json(json.dumps(totals))


@app.command()
def probe(
    student: Annotated[str, typer.Option("--student", help="provider/model, e.g. openai/gpt-5.4 or local.")],
    k: KOpt = 8,
    conditions: Annotated[Optional[list[str]], typer.Option("--conditions", help=(
        f"A condition to run (repeat the option): {', '.join(CONDITION_NAMES.values())} (or the released "
        f"names {', '.join(CONDITION_NAMES)}); default all six (code: C1, C2, C3)."))] = None,
    stage0: Annotated[bool, typer.Option("--stage0/--no-stage0", help="Run the milestone test (Stage 0).")] = True,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each answer (a reasoning model's reasoning counts in it).")] = 4096,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (reasoning models take only their default).")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the controls' substitute content.")] = 0,
    source: SourceOpt = "release",
    limit: Annotated[Optional[int], typer.Option(min=1, help="Only the first N families (the controls still draw from the whole set).")] = None,
    use_corrections: Annotated[bool, typer.Option("--use-corrections", help="Grade against corrected reference answers.")] = False,
    grader: GraderOpt = "strict",
    extended: Annotated[bool, typer.Option("--extended", help="Same as --grader extended.")] = False,
    base_url: BaseUrlOpt = None,
    param: ParamOpt = None,
    extra_body: ExtraBodyOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    model_name: ModelNameOpt = None,
    concurrency: ConcurrencyOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 120.0,
    max_cooldown: MaxCooldownOpt = 120.0,
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")] = False,
    prices: PricesOpt = None,
    max_cost: MaxCostOpt = None,
    dry_run: DryRunOpt = False,
    batch: BatchOpt = False,
    batch_poll: BatchPollOpt = 5.0,
    batch_quiet: BatchQuietOpt = 2.0,
    primitive: Annotated[bool, typer.Option("--primitive", help="Also run the primitive rung, C2-primitive and its control C2-primitive-random, on the families that have a primitive (docs/primitive.md); the others are skipped and counted.")] = False,
    primitive_fallback: Annotated[bool, typer.Option("--primitive-fallback", help="For the primitive rung, a family without a primitive uses its first KEY_MOVE milestone's description (marked as the fallback).")] = False,
) -> None:
    """Probe a student: Stage 0 and the parent ladder with its controls. Cached and resumable."""
    from .domains import get_domain
    from .probe.runner import ProbeConfig

    ladder = get_domain(domain)
    default, known = ladder.conditions, ladder.conditions + ladder.optional_conditions
    try:
        chosen = tuple(dict.fromkeys(parse_condition(c) for c in conditions)) if conditions else default
    except ValueError as exc:
        _fail(str(exc))
    if primitive:
        chosen = tuple(dict.fromkeys(chosen + PRIMITIVE_CONDITIONS))
    unknown = [CONDITION_NAMES[c] for c in chosen if c not in known]
    if unknown:
        _fail(f"the {domain} ladder has no condition {', '.join(unknown)}; "
              f"it has {', '.join(CONDITION_NAMES[c] for c in known)}")
    config = ProbeConfig(student=student, k=k, conditions=chosen, stage0=stage0, max_tokens=max_tokens,
                         temperature=temperature, seed=seed, use_corrections=use_corrections,
                         grader=_grader(grader, extended), primitive_fallback=primitive_fallback)
    client_opts = _client_options(param, extra_body, api_key_env, model_name, timeout=timeout,
                                  max_cooldown=max_cooldown, prices=load_prices(prices), max_cost=max_cost,
                                  **_batch_options(batch, batch_poll, batch_quiet))
    summary = _run(_probe(config, store, source, base_url, concurrency, rpm, tpm, limit, client_opts, dry_run, domain),
                   store, (student, base_url, client_opts))
    if as_json:
        typer.echo(json.dumps(summary))
    if dry_run:
        if not as_json:
            _say_estimate(summary, f"{summary['calls']} calls after the cache, for {summary['jobs']} jobs of "
                                   f"{summary['families']} families")
        return
    if not as_json:
        console.print(f"run {summary['run_id']}: {summary['families']} families, "
                      f"{summary['requests']} requests{_batch_rows_said(summary)}, {summary['cache_hits']} cache hits, "
                      f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out; {_say_cost(summary)}"
                      f"{_timeouts(summary)}", soft_wrap=True, highlight=False, markup=False)
    if summary.get("without_primitive") and not as_json:
        _say(f"C2-primitive and C2-primitive-random skipped {summary['without_primitive']} families without a "
             "primitive (`ladder compile --primitives-only` writes them; --primitive-fallback uses a KEY_MOVE)")
    _say_budget(summary)
    _print_failed_jobs(summary["failed_jobs"], summary["ungraded"], student, source)
    if summary["failed_jobs"] or summary["ungraded"] or summary["budget_stop"]:
        raise typer.Exit(EXIT_INCOMPLETE)


async def _results(store_path: Path, student: str, source: str, use_corrections: bool, domain: str = "math"):
    """The families of a roadmap set, the student's results on them, and the verdicts they lack
    (ungraded rollouts, failed jobs: in no result)."""
    from .domains import get_domain
    from .probe.report import missing_counts

    ladder = get_domain(domain)
    store = await _reading(store_path)
    try:
        families = await ladder.load_families(store, source)
        rollout_source = ladder.rollout_source(families[0], source)
        rollouts = await store.rollouts(student=student, source=rollout_source)
        failed = await store.failed_jobs(student=student, source=rollout_source)
    finally:
        await store.close()
    if not rollouts and not failed:
        _fail(f"{store_path} holds no rollouts of student '{student}' on families from '{source}'; "
              f"run `ladder probe --student {student} --source {source}` first")
    missing = missing_counts([r.target for r in rollouts if not r.verdict.graded], [j.target for j in failed])
    return families, ladder.collect_results(families, rollouts, use_corrections=use_corrections), missing


async def _graders(store_path: Path, student: str, source: str) -> str:
    """The grader (with its version) of a student's math rollouts on a roadmap set: "strict (strict-2)",
    or every one of them joined by " + " when runs were graded differently."""
    from .domains.math import run_grader
    from .verify import GRADER_VERSIONS

    store = await _reading(store_path)
    try:
        families = await _roadmap_set(store, source)
        rollouts = await store.rollouts(student=student, source=families[0].provenance.roadmap_set)
        runs = {r.id: r for r in await store.runs("probe")}
    finally:
        await store.close()
    names = sorted({run_grader(runs[r.run_id].config if r.run_id in runs else None) for r in rollouts})
    return " + ".join(f"{g} ({GRADER_VERSIONS[g]})" for g in names)


def _write_report(store: Path, student: list[str], out: Path, threshold: int, source: str,
                  use_corrections: bool, domain: str, html: bool) -> dict:
    """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too); returns
    each student's loaded (families, results, missing verdicts)."""
    from .domains import get_domain
    from .probe.report import write_report
    from .viewer.site import write_site

    ladder = get_domain(domain)
    if html and not ladder.verifier:
        _fail(f"--html shows math roadmap sets; the {domain} ladder has report.md and report.json")
    loaded = {name: asyncio.run(_results(store, name, source, use_corrections, domain)) for name in student}
    # a family whose reference answer is unusable is listed, never graded
    ungradable = {f.pid: why for fams, _, _ in loaded.values() for f in fams
                  if (why := ladder.ungradable(f, use_corrections))}
    students = {name: [r for r in results if r.pid not in ungradable] for name, (_, results, _) in loaded.items()}
    # answers the verifier graded: which grader, and the format audit of their final answers
    graders = {name: asyncio.run(_graders(store, name, source)) for name in student} if ladder.verifier else None
    formats = {name: asyncio.run(read_format_audit(store, name, source)) for name in student} if ladder.verifier else None
    res = write_report(students, out, tau=threshold, roadmap_set=source, graders=graders, ungradable=ungradable,
                       missing={name: r[2] for name, r in loaded.items()}, formats=formats)
    if html:
        families = next(iter(loaded.values()))[0]
        records = asyncio.run(_records(store, student, families[0].provenance.roadmap_set))
        write_site(out / "html", res, (out / "report.md").read_text(), families, students, records)
    return loaded


async def _records(store_path: Path, students: list[str], rollout_source: str) -> dict:
    """Each student's stored attempts for the HTML report (viewer.site.StudentRecords by student)."""
    from .viewer.site import read_records

    store = await _reading(store_path)
    try:
        return await read_records(store, students, rollout_source)
    finally:
        await store.close()


HtmlOpt = Annotated[bool, typer.Option("--html", help="Also write the HTML report (out/html/index.html): overview, "
                                       "one page per family with every attempt; opens from the file system.")]


@app.command()
def report(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat for two students).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, report.json and the plots.")] = Path("report"),
    threshold: Annotated[int, typer.Option("--threshold", min=1, help="tau: correct attempts of K that count as solved.")] = 1,
    source: SourceOpt = "release",
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    html: HtmlOpt = False,
) -> None:
    """Outcome and taxonomy tables, controls, CIs and plots for one or two students."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    loaded = _write_report(store, student, out, threshold, source, use_corrections, domain, html)
    console.print(f"report written to {out}/" + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""),
                  highlight=False, markup=False)
    for name, (_, _, missing) in loaded.items():
        if missing["ungraded_total"] or missing["failed_total"]:
            _say(f"{name}: {missing['ungraded_total']} ungraded rollouts and {missing['failed_total']} failed jobs "
                 "are in no table (report.md, Missing verdicts)")


@app.command()
def view(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat to show several).")],
    threshold: Annotated[int, typer.Option("--threshold", min=1, help="tau: correct attempts of K that count as solved.")] = 1,
    source: SourceOpt = "release",
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    store: StoreOpt = DEFAULT_STORE,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 8765,
    a: Annotated[Optional[str], typer.Option("--a", help="With --b: serve `ladder compare --html` of these two "
                                             "roadmap sets (one --student) instead of the report.")] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="The second roadmap set of the comparison.")] = None,
    allow_mixed_graders: Annotated[bool, typer.Option("--allow-mixed-graders", help="With --a/--b: compare even when the two sets were graded by different graders.")] = False,
) -> None:
    """Serve the HTML report (or, with --a and --b, the comparison) of a live store on 127.0.0.1, rebuilt
    when the store changes; Ctrl-C stops."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    if (a is None) != (b is None) or (a is not None and len(student) != 1):
        _fail("a comparison takes --a, --b and one --student")
    with tempfile.TemporaryDirectory(prefix="ladder-view-") as tmp:
        out, seen = Path(tmp), [None]

        def refresh() -> None:
            stamp = tuple(p.stat().st_mtime_ns for p in (store, Path(f"{store}-wal")) if p.exists())
            if stamp != seen[0]:
                if a is not None and b is not None:
                    _write_compare(store, a, b, student[0], out, use_corrections, allow_mixed_graders, True)
                else:
                    _write_report(store, student, out, threshold, source, use_corrections, "math", True)
                seen[0] = stamp

        refresh()
        serve(out / "html", refresh, port, lambda url: typer.echo(f"serving {url} (Ctrl-C stops)"))


async def _regrade(store_path: Path, student: str, source: str, domain: str) -> dict:
    """Grade every ungraded rollout of a student on one roadmap set again, from its stored response,
    with the grading options of the run that made it; no call is made."""
    from .domains import Job, get_domain
    from .probe.runner import ProbeConfig, regrade

    ladder = get_domain(domain)
    store = await Store.open(store_path)
    try:
        families = await ladder.load_families(store, source)
        by_pid = {f.pid: f for f in families}
        rollout_source = ladder.rollout_source(families[0], source)
        todo = [r for r in await store.rollouts(student=student, source=rollout_source)
                if not r.verdict.graded and r.pid in by_pid]
        configs = {rid: run.config if (run := await store.get_run(rid)) else {} for rid in {r.run_id for r in todo}}
        run_id = await store.start_run("regrade", {"student": student, "source": source, "rollouts": len(todo)})
        status, done = "interrupted", []
        try:
            with ladder:
                async def grade(r):
                    cfg = configs[r.run_id]  # the grading options of the run that made it
                    config = ProbeConfig(student=student, use_corrections=cfg.get("use_corrections", False),
                                         grader=cfg.get("grader", "strict"), extended=bool(cfg.get("extended")))
                    return await ladder.grade(Job(by_pid[r.pid], r.target, r.k, []), r.response, config)

                done = await regrade(todo, grade, store)
            left = sum(not r.verdict.graded for r in done)
            status = FINISHED_WITH_FAILURES if left else "done"
        finally:
            await store.finish_run(run_id, status)
    finally:
        await store.close()
    return {"run_id": run_id, "regraded": len(done) - left, "still_ungraded": left,
            "accepted": sum(r.verdict.accepted for r in done if r.verdict.graded)}


@app.command()
def regrade(
    student: Annotated[str, typer.Option("--student", help="The student whose ungraded rollouts to grade.")],
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Grade again every rollout whose grading failed (ungraded), from its stored response: no call."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    summary = _run(_regrade(store, student, source, domain), store)
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        _say(f"regraded {summary['regraded']} rollouts ({summary['accepted']} accepted); "
             f"{summary['still_ungraded']} still ungraded")
    if summary["still_ungraded"]:
        raise typer.Exit(EXIT_INCOMPLETE)


def _write_compare(store: Path, a: str, b: str, student: str, out: Path, use_corrections: bool,
                   allow_mixed_graders: bool, html: bool) -> None:
    """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html too)."""
    from .probe.compare import compare as run_compare, write_compare
    from .validators.atomicity import atomicity_problem
    from .viewer.site import write_compare_site

    families_a, results_a, _ = asyncio.run(_results(store, student, a, use_corrections))
    families_b, results_b, _ = asyncio.run(_results(store, student, b, use_corrections))
    graded_a, graded_b = asyncio.run(_graders(store, student, a)), asyncio.run(_graders(store, student, b))
    if graded_a != graded_b and not allow_mixed_graders:
        _fail(f"{a} was graded by {graded_a} and {b} by {graded_b}: a difference between them could be the "
              "grader's; regrade one, or pass --allow-mixed-graders")
    k = max((len(rolls) for r in results_a + results_b for rolls in r.ladder.values()), default=0)
    result = run_compare(families_a, families_b, results_a, results_b,
                         is_atomic=lambda gold: atomicity_problem(gold) is None, k=k)
    write_compare(result, out, name_a=a, name_b=b, student=student)
    if html:
        records = tuple(asyncio.run(_records(store, [student], fams[0].provenance.roadmap_set))[student]
                        for fams in (families_a, families_b))
        write_compare_site(out / "html", result, (out / "compare.md").read_text(), (a, b), student,
                           (families_a, families_b), (results_a, results_b), records)


def _write_primitive_compare(store: Path, a: str, student: str, out: Path, use_corrections: bool,
                             threshold: int) -> None:
    """primitive_vs_roadmap.md/.json in ``out``: C2-primitive against C2 on the families of ``a``."""
    from .probe.primitive import primitive_vs_roadmap, write_primitive_vs_roadmap

    result = primitive_vs_roadmap(asyncio.run(_results(store, student, a, use_corrections))[1], threshold)
    if not result["n"]:
        _fail(f"no family of '{a}' has both C2-primitive and C2 rollouts of {student}; run "
              f"`ladder probe --student {student} --source {a} --primitive` first")
    write_primitive_vs_roadmap(result, out, a, student)
    _say(f"compared the primitive and the roadmap of {a} for {student} on {result['n']} families: "
         f"{out}/primitive_vs_roadmap.md")


@app.command()
def compare(
    a: Annotated[str, typer.Option("--a", help="First roadmap set: a teacher, 'release', or TEACHER@coarse|fine.")],
    student: Annotated[str, typer.Option("--student", help="The student probed on both sets.")],
    b: Annotated[Optional[str], typer.Option("--b", help="Second roadmap set of the same problems (not with --primitive).")] = None,
    primitive: Annotated[bool, typer.Option("--primitive", help="Compare the primitive against the roadmap on the families of --a: C2-primitive vs C2 for the student (docs/primitive.md).")] = False,
    threshold: Annotated[int, typer.Option("--threshold", min=1, help="With --primitive: tau, correct attempts of K that count as solved.")] = 1,
    out: Annotated[Path, typer.Option("--out", help="Folder for compare.md and compare.json.")] = Path("compare"),
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    allow_mixed_graders: Annotated[bool, typer.Option("--allow-mixed-graders", help="Compare even when the two sets were graded by different graders.")] = False,
    store: StoreOpt = DEFAULT_STORE,
    html: Annotated[bool, typer.Option("--html", help="Also write the comparison as HTML (out/html/index.html): the "
                                       "tables, and each problem's two roadmaps side by side with the student's "
                                       "attempts; opens from the file system.")] = False,
) -> None:
    """Compare two teachers or two granularities on the same problems (paper Appendix P), or with
    --primitive the primitive against the roadmap on one set."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    if primitive == (b is not None):
        _fail("give --b (a second roadmap set) or --primitive (primitive vs roadmap on --a), not both")
    if primitive:
        if html:
            _fail("--html is for two roadmap sets (--b), not --primitive")
        _write_primitive_compare(store, a, student, out, use_corrections, threshold)
        return
    _write_compare(store, a, b, student, out, use_corrections, allow_mixed_graders, html)
    console.print(f"compared {a} and {b} for {student}: {out}/compare.md"
                  + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""), highlight=False, markup=False)

async def _runs(store_path: Path) -> list:
    store = await _reading(store_path)
    try:
        return await store.runs()
    finally:
        await store.close()


@app.command()
def runs(store: StoreOpt = DEFAULT_STORE) -> None:
    """The runs of a store with their status (running, done, interrupted), tokens and cost."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    for run in asyncio.run(_runs(store)):
        cost = "" if run.cost_usd is None else f" ${run.cost_usd:.4f}"
        typer.echo(f"{run.id}\t{run.status}\t{run.started_at}\t{run.finished_at or '-'}\t"
                   f"tokens {run.tokens_in} in / {run.tokens_out} out{cost}")


@app.command()
def demo(
    store: StoreOpt = Path("demo.sqlite"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the report.")] = Path("demo-report"),
    families: Annotated[int, typer.Option(min=1, help="How many of the embedded sample families to probe.")] = 4,
    k: KOpt = 2,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each answer of the local model.")] = 128,
) -> None:
    """The whole pipeline on the embedded default, offline: import, probe the local model, report."""
    from .probe.runner import ProbeConfig

    n = asyncio.run(_import(Path(str(DEMO_FAMILIES)), store, "release", OnDuplicate.error))
    console.print(f"imported {n} sample families from the OracleLadder release into {store}")
    config = ProbeConfig(student="local", k=k, max_tokens=max_tokens, temperature=0.7)
    summary = _run(_probe(config, store, "release", None, 2, None, None, families, {}), store)
    console.print(f"probed {summary['families']} families: {summary['requests']} local calls, "
                  f"{summary['cache_hits']} from the cache")
    _write_report(store, ["local"], out, 1, "release", False, "math", True)
    console.print(f"report written to {out}/ (report.md, report.json, plots; HTML: {out / 'html' / 'index.html'})",
                  highlight=False, markup=False)


async def _screen(config, store_path: Path, source: str, set_name: str, rule: str, base_url: list[str] | None,
                  concurrency: int | None, rpm: float | None, tpm: float | None, client_opts: dict[str, Any]) -> dict:
    """Probe the anchor (C1 and Stage 0: ordinary cached rollouts) on a roadmap set, then store each
    family's verdict in the set."""
    from collections import Counter

    from .construction.screen import screen as screen_families
    from .domains.math import collect_results

    summary = await _probe(config, store_path, source, base_url, concurrency, rpm, tpm, None, client_opts)
    store = await Store.open(store_path)
    try:
        families = await _roadmap_set(store, source)
        rollouts = await store.rollouts(student=config.student, run_id=summary["run_id"])
        verdicts = screen_families(families, collect_results(families, rollouts), set_name=set_name,
                                   anchor=config.student, rule=rule, k=config.k, max_tokens=config.max_tokens,
                                   run_id=summary["run_id"])
        for verdict in verdicts:
            await store.put_screen_verdict(verdict, wait=False)
        await store.flush()
    finally:
        await store.close()
    return {**summary, "set": set_name, "verdicts": dict(Counter(v.verdict for v in verdicts))}


@app.command()
def screen(
    anchor: Annotated[str, typer.Option("--anchor", help="provider/model of the anchor, e.g. openai/qwen3-8b-base.")],
    source: SourceOpt = "release",
    set_name: Annotated[Optional[str], typer.Option("--set", help="Name of the diagnostic set the verdicts are filed under (default: the anchor).")] = None,
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each anchor answer (the paper's construction budget: 4096).")] = 4096,
    rule: Annotated[str, typer.Option("--rule", help="default (fails all K direct attempts, solves every tested milestone in one of K) or direct-only (Appendix N: the milestone test only measured).")] = "default",
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (a later probe at the same settings reuses the screen's rollouts).")] = 1.0,
    grader: GraderOpt = "strict",
    base_url: BaseUrlOpt = None,
    param: ParamOpt = None,
    extra_body: ExtraBodyOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    model_name: ModelNameOpt = None,
    concurrency: ConcurrencyOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 120.0,
    max_cooldown: MaxCooldownOpt = 120.0,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    batch: BatchOpt = False,
    batch_poll: BatchPollOpt = 5.0,
    batch_quiet: BatchQuietOpt = 2.0,
) -> None:
    """Anchor screen and structural filter (Section 3): which compiled families enter a diagnostic set."""
    from .construction.screen import DIRECT, RULES, STRUCTURAL
    from .probe.runner import ProbeConfig

    if rule not in RULES:
        _fail(f"unknown rule '{rule}'; known: {', '.join(RULES)}")
    config = ProbeConfig(student=anchor, k=k, conditions=(DIRECT,), stage0=True, max_tokens=max_tokens,
                         temperature=temperature, grader=_grader(grader, False))
    client_opts = _client_options(param, extra_body, api_key_env, model_name, timeout=timeout,
                                  max_cooldown=max_cooldown, **_batch_options(batch, batch_poll, batch_quiet))
    summary = _run(_screen(config, store, source, set_name or anchor, rule, base_url, concurrency, rpm, tpm,
                           client_opts), store, (anchor, base_url, client_opts))
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        v = summary["verdicts"]
        _say(f"set '{summary['set']}': kept {v.get('kept', 0)} of {sum(v.values())}; unusable reference answer "
             f"{v.get('reference_answer', 0)}, solved directly "
             f"{v.get('solved_directly', 0)}, a milestone never solved {v.get('milestone_unsolved', 0)}, "
             f"fewer than 2 tested milestones {v.get(STRUCTURAL, 0)}, incomplete {v.get('incomplete', 0)}; "
             f"{summary['requests']} requests, {summary['cache_hits']} cache hits")
    _print_failed_jobs(summary["failed_jobs"], summary["ungraded"], anchor, source)
    if summary["failed_jobs"] or summary["ungraded"]:
        raise typer.Exit(EXIT_INCOMPLETE)


async def _funnel(store_path: Path, set_name: str | None, source: str | None):
    from .construction.funnel import fate, funnel as build

    store = await _reading(store_path)
    try:
        if source is not None:  # before any screen: the compile steps, compiled families "not screened"
            verdicts, name = {}, source
        else:
            if set_name is None:  # the store's only set
                sets = await store.screen_sets()
                if len(sets) != 1:
                    _fail(f"{store_path} holds {len(sets)} screened sets ({', '.join(sets) or 'none'}); "
                          "name one with --set, or give --source for the compile steps alone")
                set_name = sets[0]
            verdicts = {v.pid: v for v in await _set_verdicts(store, set_name)}
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
    finally:
        await store.close()
    return build(set_name or "", name, fates)


@app.command()
def funnel(
    set_name: Annotated[Optional[str], typer.Option("--set", help="The set of `ladder screen --set NAME` (default: the store's only set).")] = None,
    source: Annotated[Optional[str], typer.Option("--source", help="Instead of a set: the compile steps of this teacher's roadmap set, before any screen.")] = None,
    dropped: Annotated[bool, typer.Option("--dropped", help="Also list every dropped problem with its stage and reason.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Folder whose report.json gets the funnel (under \"funnel\"; other keys kept).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the funnel as JSON.")] = False,
) -> None:
    """The construction funnel of a set: candidates -> valid reference -> compiled -> screen -> structural filter."""
    from rich.table import Table

    from .construction.funnel import SCREEN_CAUSES

    if not store.is_file():
        _fail(f"{store}: no such store")
    if set_name is not None and source is not None:
        _fail("--set and --source exclude each other (a set has its own source)")
    f = asyncio.run(_funnel(store, set_name, source))
    record = f.model_dump(mode="json", exclude={"fates"}) | {"dropped": [d.model_dump() for d in f.dropped()]}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "report.json"
        report = json.loads(path.read_text()) if path.is_file() else {}
        path.write_text(json.dumps(report | {"funnel": record}, indent=2, ensure_ascii=False))
    if as_json:
        typer.echo(json.dumps(record, ensure_ascii=False))
        return
    table = Table("step", "families", "dropped", "why", title=(f"funnel of set '{f.set_name}' (roadmaps: {f.source})" if f.set_name
                                                                       else f"funnel of roadmaps {f.source}, not screened"))
    compile_why = ", ".join(f"{c} {n}" for c, n in sorted(f.compile_failures.items(), key=lambda x: -x[1]))
    screen_why = ", ".join(f"{c} {f.screen_failures[c]}" for c in SCREEN_CAUSES if f.screen_failures.get(c))
    steps = [("candidates", f.candidates, ""), ("valid reference answer", f.valid_reference, "unusable reference answer"),
             ("compiled", f.compiled, compile_why), ("passed the screen", f.passed_screen, screen_why),
             ("structural filter (final set)", f.final, "fewer than 2 tested milestones after the leak rule")]
    before = f.candidates
    for step, n, why in steps:
        table.add_row(step, str(n), str(before - n) if step != "candidates" else "", why if before > n else "")
        before = n
    Console(soft_wrap=True).print(table)
    if dropped:
        for d in f.dropped():
            typer.echo(f"{d.pid}\t{d.stage}\t{d.cause}\t{d.reason}")


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


async def _stored_gap_counts(store_path: Path, source: str, anchors: list[str], models: list[str], k: int,
                             max_tokens: int):
    """Each model's results on a set from its stored rollouts at K and max_tokens (rollouts of other
    settings left out), then the per-anchor subsets and composition-gap counts."""
    from .construction.reanchor import gap_counts
    from .domains.math import collect_results

    store = await _reading(store_path)
    try:
        families = await _roadmap_set(store, source)
        budget = {r.id for r in await store.runs("probe")
                  if isinstance(r.config, dict) and r.config.get("max_tokens") == max_tokens}
        results = {}
        for model in models:
            rollouts = [r for r in await store.rollouts(student=model, source=families[0].provenance.roadmap_set)
                        if r.k < k and r.run_id in budget]
            results[model] = collect_results(families, rollouts)
    finally:
        await store.close()
    return gap_counts(results, anchors, k)


@app.command()
def reanchor(
    counts: Annotated[Optional[Path], typer.Option("--counts", help='JSON {"subsets": {anchor: n}, "counts": {anchor: {model: composition-gap count}}}, e.g. a published table.')] = None,
    anchors: Annotated[Optional[list[str]], typer.Option("--anchors", help="Anchor models (repeat the option, or comma-separate): counts from their stored rollouts.")] = None,
    students: Annotated[Optional[list[str]], typer.Option("--students", help="Further probers, ranked but never anchors (repeat, or comma-separate).")] = None,
    source: SourceOpt = "release",
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="The budget of the rollouts read (and probed).")] = 4096,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature of what is probed.")] = 1.0,
    base_url: BaseUrlOpt = None,
    concurrency: ConcurrencyOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Kendall's tau between the model rankings of every pair of anchor screens (Appendix B, Tables 3-6).

    With --anchors: every model's Stage 0 and C1-C3 rollouts on the set; with --base-url, what is missing
    is probed first (stored calls are not asked again), else only stored rollouts are read."""
    from rich.table import Table

    from .construction.reanchor import PARENT_PROBES, reanchor as reanchor_table
    from .probe.runner import ProbeConfig

    if (counts is None) == (not anchors):
        _fail("give --counts FILE, or --anchors (with --students and --source) to count from stored rollouts")
    incomplete: list[str] = []
    if counts is not None:
        try:
            given = json.loads(counts.read_text())
            table = reanchor_table(given["counts"], given.get("subsets"))
        except OSError as exc:
            _fail(f"{counts}: {exc.strerror}")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
            _fail(f"{counts}: not a counts file ({type(exc).__name__}: {exc})")
    else:
        split = lambda names: [n.strip() for x in names or [] for n in x.split(",") if n.strip()]  # noqa: E731
        anchor_names = split(anchors)
        models = list(dict.fromkeys(anchor_names + split(students)))
        if base_url:
            for model in models:
                config = ProbeConfig(student=model, k=k, conditions=PARENT_PROBES, max_tokens=max_tokens,
                                     temperature=temperature)
                summary = _run(_probe(config, store, source, base_url, concurrency, None, None, None, {}), store,
                               (model, base_url, {}))
                _say(f"{model}: {summary['requests']} requests, {summary['cache_hits']} cache hits")
        subsets, gaps, incomplete = asyncio.run(_stored_gap_counts(store, source, anchor_names, models, k,
                                                                   max_tokens))
        table = reanchor_table(gaps, subsets)
    if as_json:
        typer.echo(json.dumps(table.model_dump(mode="json") | {"incomplete": incomplete}))
        return
    if anchors:
        models = list(dict.fromkeys(m for row in table.counts.values() for m in row))
        counted = Table("Anchor (subset)", *models, title="composition-gap families in each anchor's subset")
        for a in table.anchors:
            counted.add_row(f"{a} (n={table.subsets[a]})", *(str(table.counts[a].get(m, "-")) for m in models))
        console.print(counted)
    out = Table("Anchor", *table.anchors, title="Kendall's tau between anchor screens' rankings")
    for a in table.anchors:
        size = f" (n={table.subsets[a]})" if a in table.subsets else ""
        out.add_row(a + size, *(_signed(table.tau[a][b]) if a != b else "1.00" for b in table.anchors))
    console.print(out)
    console.print(f"mean {_signed(table.mean)}; {table.positive} of {table.pairs} pairs positive", highlight=False)
    if incomplete:
        _say(f"{len(incomplete)} families left out: some model lacks graded rollouts there (probe it, or regrade)")


async def _batches(store_path: Path, cancel: bool, api_key_env: str | None) -> tuple[list, list[str]]:
    """The store's batches, oldest first; with ``cancel``, those in flight cancelled first (their
    states as the provider then says). Returns them and the ids cancelled."""
    store = await (Store.open(store_path) if cancel else _reading(store_path))
    cancelled: list[str] = []
    try:
        records = await store.batches()
        for b in records if cancel else []:
            if b.state in ENDED:
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
    finally:
        await store.close()


@app.command("batches")
def batches_(
    store: StoreOpt = DEFAULT_STORE,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel every batch still in flight (stop the run that waits on them first: it would submit the cancelled rows again).")] = False,
    api_key_env: ApiKeyEnvOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per batch.")] = False,
) -> None:
    """List the store's provider batches (`--batch`) with their states, as of their last poll."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    records, cancelled = _run(_batches(store, cancel, api_key_env), store)
    for b in records:
        if as_json:
            typer.echo(b.model_dump_json(exclude={"custom_ids"}))
        else:
            where = f" at {b.endpoint}" if b.endpoint else ""
            _say(f"{b.provider}{where} {b.id}: {b.state}; {b.requests} requests, {b.succeeded} succeeded, "
                 f"{b.failed} failed; created {b.created_at}, last polled {b.updated_at}")
    if not as_json:
        _say(f"{len(records)} batches in {store}" + (f"; cancelled {len(cancelled)}" if cancel else ""))


if __name__ == "__main__":
    app()
