"""What the `ladder` commands share: one-line errors on stderr, running a command on an Experiment,
the options several commands take, and the options of every command that calls a model, defined
once (their defaults are `Endpoint`'s)."""

from __future__ import annotations

import asyncio
import atexit
import functools
import inspect
import json
import os
import signal
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, Protocol, TypeVar

import typer
from pydantic.fields import FieldInfo
from rich.console import Console
from rich.markup import escape

from ..clients import ProviderError, load_prices
from ..cluster import Cluster, ClusterError
from ..experiment import (
    CONCURRENCY,
    JUDGE_CONCURRENCY,
    START_CONCURRENCY,
    TEACHER_CONCURRENCY,
    Choice,
    Endpoint,
    EndpointError,
    Experiment,
    ExperimentError,
    request_body,
)
from ..experiment.configs import (
    Budgeted,
    Corrected,
    Flag,
    InDomain,
    OnDuplicate,
    OnSet,
    PrimAuditConfig,
    PrimReportConfig,
    Sampling,
    StageConfig,
    Thresholded,
    pid_list,
)
from ..experiment.endpoint import refuse_batch_on
from ..schemas.jsonl import InputError
from ..store import DEFAULT_STORE
from ..verify import grader_name

console = Console(stderr=True)

# the run finished, but some of its work has no result: probe jobs whose call failed or whose answer could
# not be graded, problems compile could not finish for a provider failure, judge calls that failed; a
# rerun picks them up
EXIT_INCOMPLETE = 3


def field_option(name: str, field: FieldInfo) -> inspect.Parameter:
    """The typer option of one config field."""
    flag = next(m for m in field.metadata if isinstance(m, Flag))
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    option = typer.Option(flag.decls, help=field.description, min=low, max=high, metavar=flag.metavar)
    kind = field.annotation if flag.cli_type is None else flag.cli_type
    default = None if flag.cli_type is not None else not field.default if flag.off else field.default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[kind, option], default=default)


def option_of(kind: type[StageConfig], name: str) -> Any:
    """The option of one config field, for a command that takes the option but not that config (the
    command's default is its own)."""
    return field_option(name, kind.model_fields[name]).annotation


StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of this experiment.")]
SourceOpt = option_of(OnSet, "source")


def fail(message: str, code: int = 2) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def say(text: str) -> None:
    console.print(text, soft_wrap=True, highlight=False, markup=False)


def existing(store: Path) -> None:
    """A command that needs the store's contents refuses a missing one."""
    if not store.is_file():
        fail(f"{store}: no such store")


def listed(values: list[str] | None) -> list[str]:
    """A repeatable option's values, each of which may be a comma list (``--conditions C1,C2``)."""
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def pids_given(value: str | None) -> tuple[str, ...] | None:
    """``--pids FILE|LIST``: the pids it names (`configs.pid_list`); None when the option is not given."""
    try:
        return None if value is None else pid_list(value)  # type: ignore[return-value]
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


PidsOpt = Annotated[str | None, typer.Option("--pids", metavar="FILE|LIST", help=(
    "Only these families: a comma list of pids, or a file of pids (one a line, or comma-separated)."))]


def positive(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} is not greater than 0")
    return value


T = TypeVar("T")


def run_experiment(store: Path, call: Callable[[Experiment], Awaitable[T]], endpoint: Endpoint | None = None, *,
                   reading: bool = False, cluster: Cluster | None = None) -> T:
    """Run a command on the experiment of ``store`` (``reading``: it only reads it, and opens it
    read-only where it cannot be written; a missing store is read as an empty one, and no file is
    made), on ``cluster`` if one is given; Ctrl-C stops it with every finished result kept in the
    store. A call that failed for good ends it with one line on the ``endpoint``; a store this command
    made is removed again when the command is refused (its input, its options)."""
    async def main() -> T:
        if reading and not store.exists():
            with tempfile.TemporaryDirectory() as empty:
                async with Experiment(Path(empty) / store.name, notify=say) as ex:
                    return await call(ex)
        async with Experiment(store, readonly=None if reading else False, notify=say, cluster=cluster) as ex:
            return await call(ex)

    made = not store.exists()
    try:
        if endpoint is not None:
            refuse_batch_on(cluster, endpoint)  # a usage error: said before Ray starts
        return asyncio.run(main())
    except (InputError, ExperimentError):
        if made:  # refused before any work (an empty pool, a bad line): no empty store is left to pass for one
            for path in (store, Path(f"{store}-wal"), Path(f"{store}-shm")):
                path.unlink(missing_ok=True)
        raise
    except EndpointError as exc:
        fail(exc.cli_message())
    except ClusterError as exc:
        fail(str(exc))
    except ProviderError as exc:
        if endpoint is None:
            raise
        fail(endpoint.explain(exc), 1)
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


def known_grader(grader: str) -> str:
    """--grader's check, before the command runs: an unknown grader is one line naming the known ones."""
    try:
        return grader_name(grader)
    except ValueError as exc:
        fail(str(exc))


BaseUrlOpt = Annotated[list[str] | None, typer.Option("--base-url", metavar="URL", help="Any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp). Repeat it (or comma-separate) for replicas of one model: each takes --concurrency calls, the least busy gets the next, one that fails is cooled down. Without it, an openai/ model calls OPENAI_BASE_URL when set.")]
ConcurrencyOpt = Annotated[int | None, typer.Option(min=1, help=f"Calls in flight at once, per server (default: what a --base-url server says it runs at once: llama.cpp's /props, SGLang's server info, llama-cpp-python's one; a server that does not say starts at {START_CONCURRENCY} and grows; else {TEACHER_CONCURRENCY} for compile, {JUDGE_CONCURRENCY} for audit judge, {CONCURRENCY} for the others). Halved at a timeout or a 429, then grown back by one.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds one request may take; then it is cut off and retried.")]
MaxCooldownOpt = Annotated[float, typer.Option("--max-cooldown", min=0, help="Longest wait, in seconds, after a 429 or between retries, whatever Retry-After asks.")]
RpmOpt = Annotated[float | None, typer.Option(callback=positive, help="Requests-per-minute limit.")]
TpmOpt = Annotated[float | None, typer.Option(callback=positive, help="Tokens-per-minute limit.")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", help="A server parameter NAME=VALUE for the request body's top level (VALUE is JSON, else a string), e.g. top_k=20; repeat the option. Part of each call's cache key.")]
ExtraBodyOpt = Annotated[str | None, typer.Option("--extra-body", help="A JSON object merged into the request body's top level, e.g. '{\"chat_template_kwargs\": {\"enable_thinking\": false}}'. Part of each call's cache key.")]
ApiKeyEnvOpt = Annotated[str | None, typer.Option("--api-key-env", help="The environment variable holding this endpoint's key. OPENAI_API_KEY / ANTHROPIC_API_KEY go only to api.openai.com / api.anthropic.com unless named here; a server without a key gets no Authorization header.")]
ModelNameOpt = Annotated[str | None, typer.Option("--model-name", help="The model name the requests carry (a server's served name); default: the part after provider/.")]
CacheTagOpt = Annotated[str | None, typer.Option("--cache-tag", metavar="TAG", help="A tag in each call's cache key, for weights changed behind the same model name (the key names the model, not the server: a new port or a replica hits the cache).")]
BatchOpt = Annotated[bool, typer.Option("--batch", help="Send the calls through the provider's batch API (openai/, anthropic/ and google/ models; half the online price, answers within 24 h): batches logged in the store, a rerun reads the batches in flight instead of submitting again. See `ladder batches`.")]
BatchPollOpt = Annotated[float, typer.Option("--batch-poll", metavar="SECONDS", min=0.001, help="With --batch: the first wait between polls of a batch; it grows 1.5x a poll, up to 5 minutes.")]
BatchDeadlineOpt = Annotated[float | None, typer.Option("--batch-deadline", metavar="SECONDS", callback=positive, help="With --batch: a batch not ended this long after its creation is cancelled, and its rows without an answer go in the next batch (default: the provider's 24 h window and an hour).")]
BatchQuietOpt = Annotated[float, typer.Option("--batch-quiet", metavar="SECONDS", min=0.0, help="With --batch: calls are submitted once none has come for this long and every answered task has asked again or ended (a round goes in one batch).")]


RayOpt = Annotated[str | None, typer.Option("--ray", metavar="ADDRESS", help="Run on a Ray cluster: local (one started on this machine), auto (the cluster this machine is in) or ray://HOST:PORT. Its workers make the calls (a localhost --base-url is each worker's own node's server) and grade; this process alone writes the store (docs/cluster.md). Needs pip install 'oracleladder[ray]'.")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", min=1, help="With --ray: the workers (Ray actors), default one per node; each takes --concurrency calls.")]
GraderOpt = Annotated[str, typer.Option("--grader", callback=known_grader, help="paper (the release's default cascade, for tables set beside the paper's), strict (default) or extended.")]
KOpt = option_of(Sampling, "k")
MaxTokensOpt = option_of(Budgeted, "max_tokens")
DomainOpt = option_of(InDomain, "domain")
PricesOpt = Annotated[Path | None, typer.Option("--prices", metavar="FILE", help="A price table (JSON, the format of oracleladder/data/prices.json) whose models override the package's.")]
MaxCostOpt = Annotated[float | None, typer.Option("--max-cost", metavar="USD", callback=positive, help="Stop cleanly, keeping everything finished, before spend plus the calls in flight (at their whole --max-tokens) could pass USD; rerun to resume.")]


# name -> (option, default): a group of options a decorator gives a command in place of one parameter
Options = dict[str, tuple[Any, Any]]


def with_group(command: Callable[..., None], slot: str, options: Options,
               build: Callable[[dict[str, Any]], Any]) -> Callable[..., None]:
    """``command`` with its parameter ``slot`` replaced by ``options``, whose values it receives as one:
    ``build`` of them by name."""
    params = []
    for p in inspect.signature(command, eval_str=True).parameters.values():
        if p.name == slot:
            params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=option, default=default)
                       for name, (option, default) in options.items()]
        else:  # keyword-only: typer passes every option by name, and the order stays the help's
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def grouped(**kwargs: Any) -> None:
        built = build({name: kwargs.pop(name) for name in options})
        command(**kwargs, **{slot: built})

    grouped.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return grouped


# the options of every command that calls a model (`calling` adds them); PRICED, of one that counts its cost
ENDPOINT_OPTIONS: Options = {
    "base_url": (BaseUrlOpt, None), "param": (ParamOpt, None), "extra_body": (ExtraBodyOpt, None),
    "api_key_env": (ApiKeyEnvOpt, None), "model_name": (ModelNameOpt, None),
    "cache_tag": (CacheTagOpt, None), "concurrency": (ConcurrencyOpt, None),
    "rpm": (RpmOpt, None), "tpm": (TpmOpt, None), "timeout": (TimeoutOpt, Endpoint.timeout),
    "max_cooldown": (MaxCooldownOpt, Endpoint.max_cooldown), "batch": (BatchOpt, Endpoint.batch),
    "batch_poll": (BatchPollOpt, Endpoint.batch_poll), "batch_quiet": (BatchQuietOpt, Endpoint.batch_quiet),
    "batch_deadline": (BatchDeadlineOpt, Endpoint.batch_deadline),
}
PRICED: Options = {"prices": (PricesOpt, None), "max_cost": (MaxCostOpt, None)}


def make_endpoint(model: str, options: dict[str, Any], **more: Any) -> Endpoint:
    """The Endpoint of ``model`` from the endpoint options (--param and --extra-body become its
    extra_body: top-level body fields, --param winning), its URLs and its key checked before any
    store is opened; with --prices and --max-cost (`PRICED`), their table and budget."""
    priced = {"prices": load_prices(options["prices"]), "max_cost": options["max_cost"]} if "prices" in options else {}
    endpoint = Endpoint(model, base_urls=listed(options["base_url"]) or None, concurrency=options["concurrency"],
                        rpm=options["rpm"], tpm=options["tpm"],
                        extra_body=request_body(options["param"], options["extra_body"]),
                        api_key_env=options["api_key_env"], model_name=options["model_name"],
                        cache_tag=options["cache_tag"], timeout=options["timeout"],
                        max_cooldown=options["max_cooldown"], batch=options["batch"],
                        batch_poll=options["batch_poll"], batch_quiet=options["batch_quiet"],
                        batch_deadline=options["batch_deadline"], **priced, **more)
    try:
        endpoint.check_key()
    except EndpointError as exc:
        said = exc.cli_message()
        fail(said if options["api_key_env"] else f"{said}, or name the variable that holds it: --api-key-env NAME")
    return endpoint


def cluster_of(address: str | None, workers: int | None) -> Cluster | None:
    """The cluster of --ray and --workers (None: this process alone); --workers alone is refused."""
    if address is None and workers is not None:
        fail("--workers counts the workers of a Ray cluster: give --ray ADDRESS too")
    try:
        return None if address is None else Cluster(address, workers=workers)
    except ClusterError as exc:
        fail(str(exc))


SummaryJsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
RunJsonOpt = Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")]
ResultJsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
TableJsonOpt = Annotated[bool, typer.Option("--json", help="Print the table as JSON.")]
RunPick = Annotated[str | None, typer.Option(
    "--run", help="Read the results of the settings of this run (an id from `ladder runs`).")]


class Flat(Protocol):
    def flat(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Calling:
    """What a command that calls a model takes besides its own options (`calling`): the endpoint options,
    the store, --json, and where the command has them the cluster (--ray, --workers) and the run whose
    results it reads (--run)."""

    endpoint_options: dict[str, Any]
    store: Path
    as_json: bool
    cluster: Cluster | None = None
    choice: Choice = Choice()

    @classmethod
    def of(cls, given: dict[str, Any]) -> Calling:
        """The group of the options `calling_options` gave, by name."""
        return cls({name: given[name] for name in ENDPOINT_OPTIONS | PRICED if name in given}, given["store"],
                   given["as_json"], cluster_of(given.get("ray"), given.get("workers")), Choice(run=given.get("run")))

    def endpoint(self, model: str, **more: Any) -> Endpoint:
        return make_endpoint(model, self.endpoint_options, **more)

    def run(self, endpoint: Endpoint, work: Callable[[Experiment], Awaitable[T]], *, reading: bool = False) -> T:
        """``work`` on the store's experiment with ``endpoint`` (`run_experiment`), on the cluster if any."""
        return run_experiment(self.store, work, endpoint, reading=reading, cluster=self.cluster)

    def said(self, result: Flat, *lines: str) -> None:
        """A result: its JSON (`flat()`) with --json, else ``lines``."""
        if self.as_json:
            typer.echo(json.dumps(result.flat()))
        for line in [] if self.as_json else lines:
            say(line)


def calling_options(json: Any, *, priced: bool = False, cluster: bool = False, run: bool = False) -> Options:
    """The options of a `Calling`: the endpoint's (with ``priced``, --prices and --max-cost), --store,
    --json (``json``: its option), and with ``cluster`` --ray and --workers, with ``run`` --run."""
    return (ENDPOINT_OPTIONS | (PRICED if priced else {}) | {"store": (StoreOpt, DEFAULT_STORE), "as_json": (json, False)}
            | ({"ray": (RayOpt, None), "workers": (WorkersOpt, None)} if cluster else {})
            | ({"run": (RunPick, None)} if run else {}))


def calling(json: Any = SummaryJsonOpt, **takes: bool) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Gives a command the options of a `Calling` (`calling_options`) in place of its ``calls`` parameter."""
    return lambda command: with_group(command, "calls", calling_options(json, **takes), Calling.of)


# a probe of a student (`ladder probe`, `ladder prim probe`): its model, and what it calls it with
probing = calling(RunJsonOpt, priced=True, cluster=True)
ProbedOpt = Annotated[str, typer.Option("--student", help="provider/model, e.g. openai/gpt-5.4 or local.")]
ThresholdOpt = option_of(Thresholded, "threshold")
CorrectionsOpt = option_of(Corrected, "use_corrections")
TauOpt = option_of(PrimReportConfig, "tau")
PrimThresholdOpt = option_of(PrimReportConfig, "threshold")
PrimSampleOpt = option_of(PrimAuditConfig, "n")
PrimRoutesOpt = option_of(PrimAuditConfig, "routes")
PrimSeedOpt = option_of(PrimAuditConfig, "seed")
OnDuplicateOpt = Annotated[OnDuplicate, typer.Option(
    "--on-duplicate", help="A pid repeated in the input file: an error naming both lines, or keep its first or last record.")]
