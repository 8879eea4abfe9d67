"""The `ladder` command line: one subcommand per stage of the pipeline."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

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
from rich.table import Table
from rich.text import Text

from ._lazy import lazy_module
from . import demo as _demo
from .audit.cli import app as audit_app
from .cli_common import (DEFAULT_STORE, EXIT_INCOMPLETE, ApiKeyEnvOpt, SourceOpt, StoreOpt, console, fail,
                         make_endpoint, positive, run_experiment, say, with_endpoint_options)
from .clients import Client, ConfigurationError, ProviderError, load_prices
from .construction.funnel import SCREEN_CAUSES
from .construction.screen import STRUCTURAL
from .domains import get_domain
from .experiment import Experiment, ExperimentError, Report, check as check_families
from .schemas import CONDITION_NAMES
from .schemas.jsonl import InputError
from .store import StoreError
from .verify import VerifierUnavailable, grader_name
from .viewer.serve import serve

if TYPE_CHECKING:
    from .construction import reanchor as _reanchor
    from .verify import api as _verify_api
else:  # SciPy, SymPy behind them: loaded by the commands that use them, not by `ladder --help`
    _reanchor = lazy_module("oracleladder.construction.reanchor")
    _verify_api = lazy_module("oracleladder.verify.api")

# The project's own errors carry a one-line message that says what to do: printed as that line
# (with --debug, with its traceback).
USER_ERRORS = (InputError, ExperimentError, StoreError, ConfigurationError, ProviderError, sqlite3.Error)


class _Ladder(TyperGroup):
    def invoke(self, ctx: typer.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:  # a subcommand's option refused: one line, not a panel
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx else ""
            fail(exc.format_message() + where)
        except USER_ERRORS as exc:
            if ctx.meta.get("debug"):
                raise
            fail(f"store: {exc}" if isinstance(exc, sqlite3.Error) else str(exc),
                 code=2 if isinstance(exc, (InputError, ExperimentError)) else 1)


app = typer.Typer(cls=_Ladder, add_completion=False, no_args_is_help=True,
                  help="OracleLadder: where does LLM reasoning fail?")
app.add_typer(audit_app, name="audit")


@app.callback()
def _options(ctx: typer.Context,
             debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")] = False) -> None:
    ctx.meta["debug"] = debug


class OnDuplicate(str, Enum):
    error = "error"
    keep_first = "keep-first"
    keep_last = "keep-last"


OnDuplicateOpt = Annotated[OnDuplicate, typer.Option(
    "--on-duplicate", help="A pid repeated in the input file: an error naming both lines, or keep its first or last record.")]


@app.command("import")
def import_(
    families: Annotated[Path, typer.Argument(help="Families in the released OracleLadder record format.")],
    store: StoreOpt = DEFAULT_STORE,
    source: Annotated[str, typer.Option(help="Name the families are filed under.")] = "release",
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
) -> None:
    """Import released-format milestone families into the store."""
    n = run_experiment(store, lambda ex: ex.import_families(families, source=source,
                                                            on_duplicate=on_duplicate.value))
    console.print(f"imported {n} families from {families} into {store} (source '{source}')")


@app.command()
def export(
    out: Annotated[Path, typer.Option("--out", help="JSONL file to write.")],
    store: StoreOpt = DEFAULT_STORE,
    teacher: Annotated[Optional[str], typer.Option(help="Only families from this source/teacher.")] = None,
    set_name: Annotated[Optional[str], typer.Option("--set", help="Only the final set of `ladder screen --set NAME`, with pre_train_phat the anchor's Stage 0 solve rate.")] = None,
) -> None:
    """Export families in the released OracleLadder record format."""
    if not store.is_file():
        fail(f"{store}: no such store")
    n = run_experiment(store, lambda ex: ex.export(out, teacher=teacher, set_name=set_name), reading=True)
    console.print(f"wrote {n} families to {out}")


GraderOpt = Annotated[str, typer.Option("--grader", help="paper (the release's default cascade, for tables set beside "
                                                          "the paper's), strict (default) or extended.")]


def _grader(grader: str, extended: bool) -> str:  # type: ignore[return]
    try:
        return grader_name(grader, extended)
    except ValueError as exc:
        fail(str(exc))  # exits


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
    try:
        verdict = _verify_api.verify(response, gold, grader=_grader(grader, extended), problem=problem)
    except VerifierUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({"label": verdict.label.value, "reason": verdict.reason, "extracted": verdict.extracted,
                               "status": verdict.status.value}))
    else:
        typer.echo(f"{verdict.label.value}: {verdict.reason}")


KOpt = Annotated[int, typer.Option("--k", min=1, help="Attempts per milestone and per condition.")]
DomainOpt = Annotated[str, typer.Option(help="math, code (families compiled with --domain code), or another registered domain (docs/domains.md).")]


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


@contextmanager
def _bar(description: str, total: int, client: Client) -> Iterator[Callable[[object], None]]:
    """The progress display of a run (experiment.Progress): one more done, and the spend now."""
    with _progress() as progress:
        task = progress.add_task(description, total=total, spend=_spend(client))
        _show_batches(progress, client)
        yield lambda _: progress.update(task, advance=1, spend=_spend(client))


def _show_batches(progress: Progress, client: Client) -> None:
    """With --batch, one line per batch on the progress display: the provider's state and counts; its
    bar fills as its results are stored (not while the provider still finalizes them)."""
    if not client.batch:
        return
    tasks: dict[str, Any] = {}

    def show(view) -> None:  # type: ignore[no-untyped-def]
        what = f"batch {view.id}: {view.state}, {view.succeeded + view.failed} of {view.requests} done at the provider"
        if view.id not in tasks:
            tasks[view.id] = progress.add_task(what, total=view.requests, spend="")
        progress.update(tasks[view.id], description=what, completed=view.settled)

    client.on_batch_status(show)


def _batch_rows_said(summary: dict) -> str:
    n = summary.get("batch_rows_submitted")
    return "" if n is None else f" ({n} batch rows submitted)"


PricesOpt = Annotated[Optional[Path], typer.Option("--prices", metavar="FILE", help="A price table (JSON, the format of oracleladder/data/prices.json) whose models override the package's.")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=positive, help="Stop cleanly, keeping everything finished, before spend plus the calls in flight (at their whole --max-tokens) could pass USD; rerun to resume.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say how many calls the run would make after the cache, and their tokens and cost (online and batch); make none.")]


def _say_estimate(e: dict, what: str) -> None:
    def usd(x: float | None) -> str:
        return "unknown (no price; see --prices)" if x is None else f"${x:.4f}"

    say(f"dry run: {what}; about {e['tokens_in']} prompt tokens, at most {e['tokens_out_max']} answer tokens; "
        f"cost at most {usd(e['cost_usd_max'])} online, {usd(e['batch_cost_usd_max'])} in batch "
        f"({e['prices']}); nothing was sent")


def _say_cost(summary: dict) -> str:
    cost = "unknown" if summary["cost_usd"] is None else f"${summary['cost_usd']:.4f}"
    return f"cost {cost} ({summary['prices']})"


def _say_budget(summary: dict) -> None:
    if summary.get("budget_stop"):
        say(f"{summary['budget_stop']}: everything finished is kept; rerun the same command (with a larger "
            "--max-cost) to resume (stored calls are not asked again)")


def _print_failed_jobs(failed: list[dict], ungraded: int, student: str, source: str) -> None:
    """The jobs a run could not finish, grouped by reason, and what to do about them."""
    by_reason: dict[str, list[dict]] = {}
    for job in failed:
        by_reason.setdefault(job["reason"], []).append(job)
    if failed:
        say(f"{len(failed)} jobs failed (no answer; rerun the same command to ask them again):")
    for reason, jobs in by_reason.items():
        say(f"  {len(jobs)} x {reason}")
        for job in jobs[:20]:
            say(f"    pid {job['pid']} target {job['target']} k {job['k']}")
        if len(jobs) > 20:
            say(f"    ... and {len(jobs) - 20} more (`ladder report` counts them per condition)")
    if ungraded:
        say(f"{ungraded} answers could not be graded (kept, in no table): "
            f"`ladder regrade --student {student} --source {source}` grades them again without a call")


@app.command()
@with_endpoint_options
def compile(  # noqa: A001 - the CLI verb of ARCHITECTURE.md
    teacher: Annotated[str, typer.Option("--teacher", help="provider/model of the teacher, e.g. openai/gpt-5.4.")],
    problems: Annotated[Optional[Path], typer.Argument(help="Math: a JSONL, CSV or Parquet pool with NuminaMath's, MATH's (answer boxed in the solution) or AIME-style field names (pid/id/unique_id, problem, answer, solution); see --field. Code: humaneval[:N] or a JSONL of stdin/stdout problems. Not with --primitives-only.")] = None,
    granularity: Annotated[str, typer.Option(help="coarse (3 milestones), default, or fine (8-10).")] = "default",
    domain: Annotated[str, typer.Option(help="math, code, or another registered domain (docs/domains.md).")] = "math",
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Teacher attempts per problem.")] = 3,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each teacher answer (a reasoning model's reasoning counts in it).")] = 4096,
    independent_solve: Annotated[bool, typer.Option("--independent-solve/--no-independent-solve", help="Check each milestone by a separate solve of its prompt alone.")] = True,
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    structured: Annotated[str, typer.Option("--structured", help="How the teacher's JSON is asked for: json_schema (a JSON-schema response_format), json_object (a JSON-object response_format with the schema: llama.cpp), tools (a forced tool call), md_json (JSON asked for in the prompt), or auto: the strongest the server takes, learned from its rejections.")] = "auto",
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
    prices: PricesOpt = None,
    max_cost: MaxCostOpt = None,
    dry_run: DryRunOpt = False,
    field: Annotated[Optional[list[str]], typer.Option("--field", metavar="NAME=COLUMN", help="The pool's column for one of pid, problem, answer, solution, e.g. problem=question; repeat the option.")] = None,
    primitives_only: Annotated[bool, typer.Option("--primitives-only", help="Write only the primitive (the key idea, docs/primitive.md) of each family of --source that has none, from its problem and roadmap; takes no PROBLEMS.")] = False,
    source: Annotated[str, typer.Option(help="With --primitives-only: the roadmap set whose families get primitives.")] = "release",
) -> None:
    """Compile milestone families with a teacher: validators, retry on error, every attempt stored."""
    if primitives_only:
        if problems is not None or domain != "math" or dry_run:
            fail("--primitives-only takes no PROBLEMS (it reads the families of --source), math only, no --dry-run")
        # online calls, as before the API: compile_primitives sets up no batch run
        endpoint = make_endpoint(teacher, {**endpoint_options, "batch": False}, structured=structured,
                                 prices=load_prices(prices), max_cost=max_cost)
        result = run_experiment(store, lambda ex: ex.compile_primitives(
            endpoint, source=source, max_attempts=max_attempts, max_tokens=max_tokens, progress=_bar), endpoint)
        if as_json:
            typer.echo(json.dumps(result))
        else:
            _say_primitives(result)
        if result["infrastructure_failures"] or result["budget_stop"]:
            raise typer.Exit(EXIT_INCOMPLETE)
        return
    if problems is None:
        fail("missing PROBLEMS: a pool of problems to compile (or --primitives-only)")
    get_domain(domain)  # an unknown name fails here, before the store is touched
    endpoint = make_endpoint(teacher, endpoint_options, structured=structured, prices=load_prices(prices),
                             max_cost=max_cost)
    summary = run_experiment(store, lambda ex: ex.compile(
        problems, endpoint, granularity=granularity, domain=domain, max_attempts=max_attempts, max_tokens=max_tokens,
        independent_solve=independent_solve, on_duplicate=on_duplicate.value, fields=field, dry_run=dry_run,
        progress=_bar), endpoint)
    if as_json:
        typer.echo(json.dumps(summary))
    if dry_run:
        if not as_json:
            _say_estimate(summary, f"about {summary['calls']} teacher calls: a first attempt for each of the "
                                   f"{summary['calls']} of {summary['problems']} problems not yet compiled by this "
                                   "teacher (re-asks and independent solves add more; cached attempts cost nothing)")
        return
    if summary["all_failed"]:
        fail(f"every teacher call failed: {summary['all_failed']}", 1)
    if not as_json:
        console.print(f"compiled {summary['compiled']}, failed {summary['failed']}, infrastructure failures "
                      f"{summary['infrastructure_failures']}; attempts per family {summary['attempts_per_family']}; "
                      f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out; {_say_cost(summary)}"
                      f"{_timeouts(summary)}", soft_wrap=True, highlight=False, markup=False)
        for pid, errs in summary["failed_why"].items():
            console.print(f"  failed {pid}: {errs[0] if errs else ''}", soft_wrap=True, highlight=False, markup=False)
        for pid, reason in summary["infrastructure_failed_why"].items():
            say(f"  {pid}: {reason}")
        if summary["infrastructure_failures"]:
            say("a provider or grader failure says nothing about the roadmap: rerun the same command to compile "
                "those problems again (stored calls are not asked again)")
    _say_budget(summary)
    if summary["infrastructure_failures"] or summary["budget_stop"]:
        raise typer.Exit(EXIT_INCOMPLETE)


def _say_primitives(summary: dict) -> None:
    say(f"primitives: {summary['compiled']} written, {len(summary['failed_why'])} failed, "
        f"{summary['had_primitive']} of {summary['families']} families already had one; "
        f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out; {_say_cost(summary)}")
    for pid, why in summary["failed_why"].items():
        say(f"  failed {pid}: {why}")


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
    checked = check_families(families, use_corrections=use_corrections, on_duplicate=on_duplicate.value)
    if as_json:
        for family, report in zip(checked.families, checked.reports):
            typer.echo(json.dumps({
                "pid": report.pid, "passed": report.passed, "leak_level": checked.leak_level(family),
                "checks": [c.model_dump(mode="json") for c in report.checks],
            }))
        typer.echo(json.dumps({"totals": checked.totals}))
        return
    for report in checked.reports:
        for c in report.failures():
            # numbered from 1 like the reasons ("duplicates milestone 1's gold"); m<i> is its record id
            where = f"milestone {c.milestone + 1} (m{c.milestone})" if c.milestone is not None else "family"
            console.print(f"{report.pid} {where} [{c.check}] {c.reason}", soft_wrap=True, highlight=False, markup=False)
    console.print_json(json.dumps(checked.totals))


@app.command()
@with_endpoint_options
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
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")] = False,
    prices: PricesOpt = None,
    max_cost: MaxCostOpt = None,
    dry_run: DryRunOpt = False,
    primitive: Annotated[bool, typer.Option("--primitive", help="Also run the primitive rung, C2-primitive and its control C2-primitive-random, on the families that have a primitive (docs/primitive.md); the others are skipped and counted.")] = False,
    primitive_fallback: Annotated[bool, typer.Option("--primitive-fallback", help="For the primitive rung, a family without a primitive uses its first KEY_MOVE milestone's description (marked as the fallback).")] = False,
) -> None:
    """Probe a student: Stage 0 and the parent ladder with its controls. Cached and resumable."""
    grader = _grader(grader, extended)
    endpoint = make_endpoint(student, endpoint_options, prices=load_prices(prices), max_cost=max_cost)
    summary = run_experiment(store, lambda ex: ex.probe(
        endpoint, k=k, conditions=conditions, stage0=stage0, max_tokens=max_tokens, temperature=temperature,
        seed=seed, use_corrections=use_corrections, grader=grader, source=source, limit=limit,
        domain=domain, primitive=primitive, primitive_fallback=primitive_fallback, dry_run=dry_run,
        progress=_bar), endpoint)
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
        say(f"C2-primitive and C2-primitive-random skipped {summary['without_primitive']} families without a "
            "primitive (`ladder compile --primitives-only` writes them; --primitive-fallback uses a KEY_MOVE)")
    _say_budget(summary)
    _print_failed_jobs(summary["failed_jobs"], summary["ungraded"], student, source)
    if summary["failed_jobs"] or summary["ungraded"] or summary["budget_stop"]:
        raise typer.Exit(EXIT_INCOMPLETE)


def _write_report(store: Path, student: list[str], out: Path, threshold: int, source: str,
                  use_corrections: bool, domain: str, html: bool) -> Report:
    """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too)."""
    async def write(ex: Experiment) -> Report:
        if html:
            ex.check_html(domain)
        report = await ex.report(student, source=source, threshold=threshold, use_corrections=use_corrections,
                                 domain=domain)
        await ex.write_report(report, out, html=html)
        return report

    return run_experiment(store, write, reading=True)


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
        fail(f"{store}: no such store")
    written = _write_report(store, student, out, threshold, source, use_corrections, domain, html)
    console.print(f"report written to {out}/" + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""),
                  highlight=False, markup=False)
    for name, missing in written.missing.items():
        if missing["ungraded_total"] or missing["failed_total"]:
            say(f"{name}: {missing['ungraded_total']} ungraded rollouts and {missing['failed_total']} failed jobs "
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
        fail(f"{store}: no such store")
    if (a is None) != (b is None) or (a is not None and len(student) != 1):
        fail("a comparison takes --a, --b and one --student")
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
        fail(f"{store}: no such store")
    summary = run_experiment(store, lambda ex: ex.regrade(student, source=source, domain=domain))
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        say(f"regraded {summary['regraded']} rollouts ({summary['accepted']} accepted); "
            f"{summary['still_ungraded']} still ungraded")
    if summary["still_ungraded"]:
        raise typer.Exit(EXIT_INCOMPLETE)


def _write_compare(store: Path, a: str, b: str, student: str, out: Path, use_corrections: bool,
                   allow_mixed_graders: bool, html: bool) -> None:
    """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html too)."""
    run_experiment(store, lambda ex: ex.write_compare(a, b, student, out, use_corrections=use_corrections,
                                                     allow_mixed_graders=allow_mixed_graders, html=html), reading=True)


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
        fail(f"{store}: no such store")
    if primitive == (b is not None):
        fail("give --b (a second roadmap set) or --primitive (primitive vs roadmap on --a), not both")
    if primitive:
        if html:
            fail("--html is for two roadmap sets (--b), not --primitive")
        result = run_experiment(store, lambda ex: ex.write_primitive_compare(
            a, student, out, threshold=threshold, use_corrections=use_corrections), reading=True)
        say(f"compared the primitive and the roadmap of {a} for {student} on {result['n']} families: "
            f"{out}/primitive_vs_roadmap.md")
        return
    assert b is not None
    _write_compare(store, a, b, student, out, use_corrections, allow_mixed_graders, html)
    console.print(f"compared {a} and {b} for {student}: {out}/compare.md"
                  + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""), highlight=False, markup=False)


@app.command()
def runs(store: StoreOpt = DEFAULT_STORE) -> None:
    """The runs of a store with their status (running, done, interrupted), tokens and cost."""
    if not store.is_file():
        fail(f"{store}: no such store")
    for run in run_experiment(store, lambda ex: ex.runs(), reading=True):
        cost = "" if run.cost_usd is None else f" ${run.cost_usd:.4f}"
        typer.echo(f"{run.id}\t{run.status}\t{run.started_at}\t{run.finished_at or '-'}\t"
                   f"tokens {run.tokens_in} in / {run.tokens_out} out{cost}")


@app.command()
def demo(
    store: StoreOpt = Path("demo.sqlite"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the report.")] = Path("demo-report"),
    families: Annotated[Optional[int], typer.Option(min=1, help="Probe only the first N families of the demo set.")] = None,
    k: KOpt = _demo.K,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each answer of the local model (the default cuts none off).")] = _demo.MAX_TOKENS,
    open_report: Annotated[bool, typer.Option("--open", help="Open the HTML report in a browser when it is written.")] = False,
) -> None:
    """The whole pipeline on the embedded model, offline: import the demo set, probe, report (docs/demo.md)."""
    result = run_experiment(store, lambda ex: _demo.run(ex, out, families=families, k=k, max_tokens=max_tokens,
                                                         progress=_bar))
    for part in _demo.summary(result):
        console.print(part, highlight=False, markup=False)
    if open_report and not _demo.open_report(result.html):
        say(f"no browser found here: open {result.html} in one")


@app.command()
@with_endpoint_options
def screen(
    anchor: Annotated[str, typer.Option("--anchor", help="provider/model of the anchor, e.g. openai/qwen3-8b-base.")],
    source: SourceOpt = "release",
    set_name: Annotated[Optional[str], typer.Option("--set", help="Name of the diagnostic set the verdicts are filed under (default: the anchor).")] = None,
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each anchor answer (the paper's construction budget: 4096).")] = 4096,
    rule: Annotated[str, typer.Option("--rule", help="default (fails all K direct attempts, solves every tested milestone in one of K) or direct-only (Appendix N: the milestone test only measured).")] = "default",
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (a later probe at the same settings reuses the screen's rollouts).")] = 1.0,
    grader: GraderOpt = "strict",
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Anchor screen and structural filter (Section 3): which compiled families enter a diagnostic set."""
    grader = _grader(grader, False)
    endpoint = make_endpoint(anchor, endpoint_options)
    summary = run_experiment(store, lambda ex: ex.screen(
        endpoint, source=source, set_name=set_name, k=k, max_tokens=max_tokens, rule=rule, temperature=temperature,
        grader=grader, progress=_bar), endpoint)
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        v = summary["verdicts"]
        say(f"set '{summary['set']}': kept {v.get('kept', 0)} of {sum(v.values())}; unusable reference answer "
            f"{v.get('reference_answer', 0)}, solved directly "
            f"{v.get('solved_directly', 0)}, a milestone never solved {v.get('milestone_unsolved', 0)}, "
            f"fewer than 2 tested milestones {v.get(STRUCTURAL, 0)}, incomplete {v.get('incomplete', 0)}; "
            f"{summary['requests']} requests, {summary['cache_hits']} cache hits")
    _print_failed_jobs(summary["failed_jobs"], summary["ungraded"], anchor, source)
    if summary["failed_jobs"] or summary["ungraded"]:
        raise typer.Exit(EXIT_INCOMPLETE)


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
    if not store.is_file():
        fail(f"{store}: no such store")
    f = run_experiment(store, lambda ex: ex.funnel(set_name=set_name, source=source), reading=True)
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


@app.command()
@with_endpoint_options
def reanchor(
    counts: Annotated[Optional[Path], typer.Option("--counts", help='JSON {"subsets": {anchor: n}, "counts": {anchor: {model: composition-gap count}}}, e.g. a published table.')] = None,
    anchors: Annotated[Optional[list[str]], typer.Option("--anchors", help="Anchor models (repeat the option, or comma-separate): counts from their stored rollouts.")] = None,
    students: Annotated[Optional[list[str]], typer.Option("--students", help="Further probers, ranked but never anchors (repeat, or comma-separate).")] = None,
    source: SourceOpt = "release",
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="The budget of the rollouts read (and probed).")] = 4096,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature of what is probed.")] = 1.0,
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Kendall's tau between the model rankings of every pair of anchor screens (Appendix B, Tables 3-6).

    With --anchors: every model's Stage 0 and C1-C3 rollouts on the set; with --base-url, what is missing
    is probed first (stored calls are not asked again), else only stored rollouts are read."""
    if (counts is None) == (not anchors):
        fail("give --counts FILE, or --anchors (with --students and --source) to count from stored rollouts")
    incomplete: list[str] = []
    if counts is not None:
        try:
            given = json.loads(counts.read_text())
            table = _reanchor.reanchor(given["counts"], given.get("subsets"))
        except OSError as exc:
            fail(f"{counts}: {exc.strerror}")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
            fail(f"{counts}: not a counts file ({type(exc).__name__}: {exc})")
    else:
        split = lambda names: [n.strip() for x in names or [] for n in x.split(",") if n.strip()]  # noqa: E731
        anchor_names = split(anchors)
        models = list(dict.fromkeys(anchor_names + split(students)))
        if endpoint_options["base_url"]:
            for model in models:
                endpoint = make_endpoint(model, endpoint_options)
                summary = run_experiment(store, lambda ex: ex.probe(
                    endpoint, k=k, conditions=_reanchor.PARENT_PROBES, max_tokens=max_tokens,
                    temperature=temperature, source=source, progress=_bar), endpoint)
                say(f"{model}: {summary['requests']} requests, {summary['cache_hits']} cache hits")
        subsets, gaps, incomplete = run_experiment(store, lambda ex: ex.gap_counts(
            anchor_names, models, source=source, k=k, max_tokens=max_tokens), reading=True)
        table = _reanchor.reanchor(gaps, subsets)
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
        say(f"{len(incomplete)} families left out: some model lacks graded rollouts there (probe it, or regrade)")


@app.command("batches")
def batches_(
    store: StoreOpt = DEFAULT_STORE,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel every batch still in flight (stop the run that waits on them first: it would submit the cancelled rows again).")] = False,
    api_key_env: ApiKeyEnvOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per batch.")] = False,
) -> None:
    """List the store's provider batches (`--batch`) with their states, as of their last poll."""
    if not store.is_file():
        fail(f"{store}: no such store")
    records, cancelled = run_experiment(store, lambda ex: ex.batches(cancel=cancel, api_key_env=api_key_env),
                                        reading=not cancel)
    for b in records:
        if as_json:
            typer.echo(b.model_dump_json(exclude={"custom_ids"}))
        else:
            where = f" at {b.endpoint}" if b.endpoint else ""
            say(f"{b.provider}{where} {b.id}: {b.state}; {b.requests} requests, {b.succeeded} succeeded, "
                f"{b.failed} failed; created {b.created_at}, last polled {b.updated_at}")
    if not as_json:
        say(f"{len(records)} batches in {store}" + (f"; cancelled {len(cancelled)}" if cancel else ""))


if __name__ == "__main__":
    app()
