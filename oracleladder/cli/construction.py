"""`ladder screen`, `funnel` and `reanchor`: which compiled families enter a diagnostic set, the
funnel from candidates to the final set, and whether the anchor of the screen changes the ranking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from .._lazy import lazy_module
from ..construction.funnel import into_report
from ..construction.screen import INCOMPLETE, KEPT, MILESTONE_UNSOLVED, SOLVED_DIRECTLY, STRUCTURAL
from ..experiment import ProbeResult, ScreenResult
from ..report import console as terminal
from ..report.palette import n_families
from ..schemas import LADDER
from ..store import DEFAULT_STORE
from ..validators.reference import CHECK as REFERENCE_CHECK
from .common import (
    EXIT_INCOMPLETE,
    EncodingOpt,
    FieldOpt,
    GraderOpt,
    KOpt,
    NullValuesOpt,
    RayOpt,
    ShardOpt,
    SourceOpt,
    StoreOpt,
    WorkersOpt,
    cluster_of,
    console,
    existing,
    fail,
    listed,
    make_endpoint,
    null_texts,
    run_experiment,
    say,
    shard_of,
    with_endpoint_options,
)
from .display import bar, print_failed_jobs

if TYPE_CHECKING:
    from ..construction import reanchor as _reanchor
else:  # SciPy behind it: loaded by the command that uses it, not by `ladder --help`
    _reanchor = lazy_module("oracleladder.construction.reanchor")


@with_endpoint_options
def screen(
    anchor: Annotated[str, typer.Option("--anchor", help="provider/model of the anchor, e.g. openai/qwen3-8b-base.")],
    pool: Annotated[Path | None, typer.Argument(help="A raw pool, screened before any compile (Appendix N, the code pilot), read as `ladder compile` reads it: math, a JSONL, CSV or Parquet pool (see --field); code, humaneval[:N] or a JSONL of stdin/stdout problems. Only --rule direct-only; `ladder compile POOL --set NAME` compiles the survivors. Without it: the compiled families of --source.")] = None,
    domain: Annotated[str, typer.Option(help="With POOL: math, code, or another registered domain (docs/domains.md).")] = "math",
    source: SourceOpt = "release",
    set_name: Annotated[str | None, typer.Option("--set", help="Name of the diagnostic set the verdicts are filed under (default: the anchor).")] = None,
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each anchor answer (the paper's construction budget: 4096).")] = 4096,
    rule: Annotated[str, typer.Option("--rule", help="default (fails all K direct attempts, solves every tested milestone in one of K) or direct-only (Appendix N: the milestone test only measured; the only rule for a raw POOL, which has no roadmaps).")] = "default",
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (a later probe at the same settings reuses the screen's rollouts).")] = 1.0,
    grader: GraderOpt = "strict",
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    field: FieldOpt = None,
    null_values: NullValuesOpt = None,
    encoding: EncodingOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    shard: ShardOpt = None,
    ray: RayOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Anchor screen and structural filter (Section 3): which compiled families enter a diagnostic set;
    with POOL, which raw problems are worth compiling (0 of K direct attempts solved)."""
    if pool is None and (domain != "math" or field or null_values or encoding):
        fail("--domain, --field, --null-values and --encoding are for a raw POOL; a compiled set is math only")
    split, cluster = shard_of(shard), cluster_of(ray, workers)
    endpoint = make_endpoint(anchor, endpoint_options)
    if pool is not None:
        result = run_experiment(store, lambda ex: ex.screen_pool(
            pool, endpoint, domain=domain, set_name=set_name, k=k, max_tokens=max_tokens, rule=rule,
            temperature=temperature, grader=grader, fields=field or (), null_values=null_texts(null_values),
            encoding=encoding, shard=split, progress=bar), endpoint, cluster=cluster)
    else:
        result = run_experiment(store, lambda ex: ex.screen(
            endpoint, source=source, set_name=set_name, k=k, max_tokens=max_tokens, rule=rule,
            temperature=temperature, grader=grader, shard=split, progress=bar), endpoint, cluster=cluster)
    if as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        say(_screened(result, None if pool is None else domain))
    # a raw pool's ungraded answers are graded again by a rerun (it has no roadmap set to regrade)
    print_failed_jobs(result.failed_jobs, result.ungraded, anchor, source if pool is None else None)
    if result.failed_jobs or result.ungraded:
        raise typer.Exit(EXIT_INCOMPLETE)


def _screened(result: ScreenResult, raw: str | None) -> str:
    """The screen's verdicts in one line (``raw``: the domain of a raw pool's screen)."""
    v = result.verdicts
    causes = ([("unscreened", INCOMPLETE)] if raw else
              [("a milestone never solved", MILESTONE_UNSOLVED), ("fewer than 2 tested milestones", STRUCTURAL),
               ("incomplete", INCOMPLETE)])
    counts = [("unusable reference answer", REFERENCE_CHECK), ("solved directly", SOLVED_DIRECTLY), *causes]
    return (f"set '{result.set_name}'{f' (raw {raw} pool)' if raw else ''}: kept {v.get(KEPT, 0)} of "
            f"{sum(v.values())}{' for compile' if raw else ''}; "
            + ", ".join(f"{what} {v.get(verdict, 0)}" for what, verdict in counts)
            + f"; {result.usage.requests} requests, {result.usage.cache_hits} cache hits")


def funnel(
    set_name: Annotated[str | None, typer.Option("--set", help="The set of `ladder screen --set NAME` (default: the store's only set).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Instead of a set: the compile steps of this teacher's roadmap set, before any screen. With the --set of a raw pool's screen: the roadmap set compiled from its survivors.")] = None,
    dropped: Annotated[bool, typer.Option("--dropped", help="Also list every dropped problem with its stage and reason.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Folder whose report.json gets the funnel (under \"funnel\"; other keys kept).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the funnel as JSON.")] = False,
) -> None:
    """The construction funnel of a set: candidates -> valid reference -> compiled -> screen -> structural filter."""
    existing(store)
    f = run_experiment(store, lambda ex: ex.funnel(set_name=set_name, source=source), reading=True)
    record = f.model_dump(mode="json", exclude={"fates"}) | {"dropped": [d.model_dump() for d in f.dropped()]}
    if out is not None:
        into_report(out, record)
    if as_json:
        typer.echo(json.dumps(record, ensure_ascii=False))
        return
    Console(soft_wrap=True).print(terminal.funnel_table(f))
    if dropped:
        for d in f.dropped():
            typer.echo(f"{d.pid}\t{d.stage}\t{d.cause}\t{d.reason}")


@with_endpoint_options
def reanchor(
    counts: Annotated[Path | None, typer.Option("--counts", help='JSON {"subsets": {anchor: n}, "counts": {anchor: {model: composition-gap count}}}, e.g. a published table.')] = None,
    anchors: Annotated[list[str] | None, typer.Option("--anchors", help="Anchor models (repeat the option, or comma-separate): counts from their stored rollouts.")] = None,
    sets: Annotated[list[str] | None, typer.Option("--sets", help="Screened sets (`ladder screen --set`, one per anchor; repeat, or comma-separate): the families each keeps and how many of each other's (Table 29).")] = None,
    students: Annotated[list[str] | None, typer.Option("--students", help="Further probers, ranked but never anchors (repeat, or comma-separate).")] = None,
    source: SourceOpt = "release",
    k: KOpt = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="The budget of the rollouts read (and probed).")] = 4096,
    stage0_max_tokens: Annotated[int | None, typer.Option("--stage0-max-tokens", min=1, help="The budget of the Stage 0 rollouts read (and probed), C1-C3 staying at --max-tokens (Tables 5-6: the milestone test at the 4K screening budget); default --max-tokens.")] = None,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature of what is probed.")] = 1.0,
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Kendall's tau between the model rankings of every pair of anchor screens (Appendix B, Tables 3-6),
    or with --sets the families each anchor's screen keeps (Appendix N, Table 29).

    With --anchors: every model's Stage 0 and C1-C3 rollouts on the set; with --base-url, what is missing
    is probed first (stored calls are not asked again), else only stored rollouts are read."""
    if sum((counts is not None, bool(anchors), bool(sets))) != 1:
        fail("give --counts FILE, --anchors (with --students and --source) to count from stored rollouts, or "
             "--sets to cross the sets screens kept")
    if sets:
        existing(store)
        across = run_experiment(store, lambda ex: ex.kept_across(listed(sets)), reading=True)
        if as_json:
            typer.echo(json.dumps(across.model_dump(mode="json")))
        else:
            console.print(terminal.kept_across_table(across))
        return
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
        anchor_names = listed(anchors)
        models = list(dict.fromkeys(anchor_names + listed(students)))
        split = stage0_max_tokens not in (None, max_tokens)
        # one probe where Stage 0 and C1-C3 share the budget; else Stage 0 (with C1, as a screen) at its own
        probes = [(LADDER.parent_probes, not split, max_tokens)] + (
            [((LADDER.parent_probes[0],), True, stage0_max_tokens)] if split else [])
        if endpoint_options["base_url"]:
            for model in models:
                endpoint = make_endpoint(model, endpoint_options)
                for conditions, stage0, budget in probes:
                    probed: ProbeResult = run_experiment(store, lambda ex: ex.probe(  # noqa: B023 (run at once)
                        endpoint, k=k, conditions=conditions, stage0=stage0, max_tokens=budget,  # noqa: B023
                        temperature=temperature, source=source, progress=bar), endpoint)
                    say(f"{model} at {budget} tokens: {probed.usage.requests} requests, "
                        f"{probed.usage.cache_hits} cache hits")
        subsets, gaps, incomplete = run_experiment(store, lambda ex: ex.gap_counts(
            anchor_names, models, source=source, k=k, max_tokens=max_tokens, temperature=temperature,
            stage0_max_tokens=stage0_max_tokens), reading=True)
        table = _reanchor.reanchor(gaps, subsets)
    if as_json:
        typer.echo(json.dumps(table.model_dump(mode="json") | {"incomplete": incomplete}))
        return
    if anchors:
        console.print(terminal.anchor_counts_table(table))
    console.print(terminal.tau_table(table))
    console.print(terminal.tau_summary(table), highlight=False)
    if incomplete:
        say(f"{n_families(len(incomplete))} left out: some model lacks graded rollouts there (probe it, or regrade)")
