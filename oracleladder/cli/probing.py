"""`ladder verify`, `probe` and `regrade`: one answer graded, a student probed on a roadmap set,
and the answers whose grading failed graded again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._lazy import lazy_module
from ..experiment import BUDGET_STOPPED, FINISHED_WITH_FAILURES, ProbeEstimate
from ..experiment.benchmark_scores import BENCHMARK
from ..experiment.configs import BenchmarkConfig, ProbeConfig
from ..report.palette import n_families
from ..store import DEFAULT_STORE
from ..workers import WorkersUnavailable
from .common import (
    EXIT_INCOMPLETE,
    Calling,
    DomainOpt,
    GraderOpt,
    ProbedOpt,
    ResultJsonOpt,
    SourceOpt,
    StoreOpt,
    SummaryJsonOpt,
    calling,
    existing,
    probing,
    run_experiment,
    say,
)
from .display import bar, batch_rows_said, cost_said, print_failed_jobs, probe_estimate_said, say_budget, timeouts_said
from .options import with_config

if TYPE_CHECKING:
    from ..verify import api as _verify_api
else:  # SymPy behind it: loaded when an answer is graded, not by `ladder --help`
    _verify_api = lazy_module("oracleladder.verify.api")


def verify(
    gold: Annotated[str, typer.Option("--gold", help="Gold answer.")],
    response: Annotated[str, typer.Option("--response", help="Student response (its last \\boxed{} is graded).")],
    grader: GraderOpt = "strict",
    problem: Annotated[str, typer.Option(help="Problem text (lets extended mode read MCQ options).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Grade one response against one gold answer."""
    try:
        verdict = _verify_api.verify(response, gold, grader=grader, problem=problem)
    except WorkersUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({"label": verdict.label.value, "reason": verdict.reason, "extracted": verdict.extracted,
                               "status": verdict.status.value}))
    else:
        typer.echo(f"{verdict.label.value}: {verdict.reason}")


@probing
@with_config
def probe(
    student: ProbedOpt,
    config: ProbeConfig,
    calls: Calling,
) -> None:
    """Probe a student: Stage 0 and the parent ladder with its controls. Cached and resumable."""
    endpoint = calls.endpoint(student)
    if config.dry_run:
        existing(calls.store)  # the families to probe are in it
    result = calls.run(endpoint, lambda ex: ex.probe(endpoint, config, progress=bar), reading=config.dry_run)
    if isinstance(result, ProbeEstimate):
        calls.said(result, probe_estimate_said(result))
        return
    usage = result.usage
    skipped = [f"C2-primitive and C2-primitive-random skipped {n_families(result.without_primitive)} without a "
               "primitive (`ladder compile --primitives-only` writes them; --primitive-fallback uses a KEY_MOVE)"
               ] if result.without_primitive else []
    calls.said(result, f"run {result.run_id}: {n_families(result.families)}, "
                       f"{usage.requests} requests{batch_rows_said(result.batch_rows_submitted)}, "
                       f"{usage.cache_hits} cache hits, tokens {usage.tokens_in} in / {usage.tokens_out} out; "
                       f"{cost_said(usage)}{timeouts_said(usage)}", *skipped)
    say_budget(result.budget_stop)
    print_failed_jobs(result.failed_jobs, result.ungraded, student, config.source)
    if result.endpoint_lost:
        say(f"the endpoint stopped answering mid-run ({result.endpoint_lost}): every finished job is stored")
    if result.failed_jobs or result.ungraded or result.budget_stop:
        status = BUDGET_STOPPED if result.budget_stop else FINISHED_WITH_FAILURES
        say(f"run {result.run_id}: {status}; rerun the same command to resume (stored calls are not asked again)")
        raise typer.Exit(EXIT_INCOMPLETE)


def regrade(
    student: Annotated[str, typer.Option("--student", help="The student whose ungraded rollouts to grade.")],
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    as_json: SummaryJsonOpt = False,
) -> None:
    """Grade again every rollout whose grading failed (ungraded), from its stored response: no call."""
    existing(store)
    result = run_experiment(store, lambda ex: ex.regrade(student, source=source, domain=domain))
    if as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        say(f"regraded {result.regraded} rollouts ({result.accepted} accepted); "
            f"{result.still_ungraded} still ungraded")
    if result.still_ungraded:
        raise typer.Exit(EXIT_INCOMPLETE)


@calling(ResultJsonOpt)
@with_config
def benchmark(
    student: Annotated[str, typer.Option("--student", help="provider/model of the student.")],
    problems: Annotated[Path, typer.Argument(help="A JSONL, CSV or Parquet pool of problems with reference answers "
                                             "(the field names `ladder compile` reads; see --field).")],
    config: BenchmarkConfig,
    calls: Calling,
) -> None:
    """A plain benchmark probe, the paper's external comparator (Tables 1, 17): each problem asked directly,
    no roadmap, K times; pass@1 and pass@K over the problems with K graded answers."""
    endpoint = calls.endpoint(student)
    result = calls.run(endpoint, lambda ex: ex.benchmark(endpoint, problems, config, progress=bar))
    left = f"; {result.no_answer} without a reference answer left out" if result.no_answer else ""
    calls.said(result, f"benchmark '{result.name}': {result.complete} of {result.problems} problems with {config.k} "
                       f"graded answers{left}; pass@1 {score(result.pass_at_1)}, pass@{config.k} "
                       f"{score(result.pass_at_k)}",
               result.truncation.said(f"benchmark '{result.name}'", [result.max_tokens]))
    print_failed_jobs(result.failed_jobs, result.ungraded, student, BENCHMARK + result.name)
    if result.failed_jobs or result.ungraded:
        raise typer.Exit(EXIT_INCOMPLETE)


def score(x: float | None) -> str:
    """A score as a share with three digits; "none" where no problem was complete."""
    return "none" if x is None else f"{x:.3f}"
