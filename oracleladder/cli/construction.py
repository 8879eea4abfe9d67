"""`ladder screen`, `funnel` and `reanchor`: which compiled families enter a diagnostic set, the
funnel from candidates to the final set, and whether the anchor of the screen changes the ranking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..construction import reanchor as _reanchor
from ..construction.funnel import into_report
from ..construction.screen import INCOMPLETE, KEPT, MILESTONE_UNSOLVED, SOLVED_DIRECTLY, STRUCTURAL
from ..experiment import ScreenResult
from ..experiment.configs import ReanchorConfig, ScreenConfig
from ..report import console as terminal
from ..report.palette import n_families
from ..store import DEFAULT_STORE
from ..validators.reference import CHECK as REFERENCE_CHECK
from .common import (
    EXIT_INCOMPLETE,
    Calling,
    StoreOpt,
    TableJsonOpt,
    calling,
    console,
    existing,
    fail,
    listed,
    run_experiment,
    say,
)
from .display import bar, print_failed_jobs
from .options import with_config


@calling(cluster=True)
@with_config
def screen(
    anchor: Annotated[str, typer.Option("--anchor", help="provider/model of the anchor, e.g. openai/qwen3-8b-base.")],
    pool: Annotated[Path | None, typer.Argument(help="A raw pool, screened before any compile (Appendix N, the code pilot), read as `ladder compile` reads it: math, a JSONL, CSV or Parquet pool (see --field); code, humaneval[:N] or a JSONL of stdin/stdout problems. Only --rule direct-only; `ladder compile POOL --set NAME` compiles the survivors. Without it: the compiled families of --source.")] = None,
    *,
    config: ScreenConfig,
    calls: Calling,
) -> None:
    """Anchor screen and structural filter (Section 3): which compiled families enter a diagnostic set;
    with POOL, which raw problems are worth compiling (0 of K direct attempts solved)."""
    if pool is None and (config.domain != "math" or config.fields or config.null_values or config.encoding):
        fail("--domain, --field, --null-values and --encoding are for a raw POOL; a compiled set is math only")
    endpoint = calls.endpoint(anchor)
    result = calls.run(endpoint, lambda ex: (
        ex.screen(endpoint, config, progress=bar) if pool is None else
        ex.screen_pool(pool, endpoint, config, progress=bar)))
    calls.said(result, _screened(result, None if pool is None else config.domain))
    # a raw pool's ungraded answers are graded again by a rerun (it has no roadmap set to regrade)
    print_failed_jobs(result.failed_jobs, result.ungraded, anchor, config.source if pool is None else None)
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


@calling(TableJsonOpt)
@with_config
def reanchor(
    counts: Annotated[Path | None, typer.Option("--counts", help='JSON {"subsets": {anchor: n}, "counts": {anchor: {model: composition-gap count}}}, e.g. a published table.')] = None,
    anchors: Annotated[list[str] | None, typer.Option("--anchors", help="Anchor models (repeat the option, or comma-separate): counts from their stored rollouts.")] = None,
    sets: Annotated[list[str] | None, typer.Option("--sets", help="Screened sets (`ladder screen --set`, one per anchor; repeat, or comma-separate): the families each keeps and how many of each other's (Table 29).")] = None,
    students: Annotated[list[str] | None, typer.Option("--students", help="Further probers, ranked but never anchors (repeat, or comma-separate).")] = None,
    *,
    config: ReanchorConfig,
    calls: Calling,
) -> None:
    """Kendall's tau between the model rankings of every pair of anchor screens (Appendix B, Tables 3-6),
    or with --sets the families each anchor's screen keeps (Appendix N, Table 29).

    With --anchors: every model's Stage 0 and C1-C3 rollouts on the set; with --base-url, what is missing
    is probed first (stored calls are not asked again), else only stored rollouts are read."""
    store, as_json = calls.store, calls.as_json
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
        # with --base-url, what is missing is probed first
        endpoints = {m: calls.endpoint(m) for m in models} if calls.endpoint_options["base_url"] else {}
        subsets, gaps, incomplete = run_experiment(store, lambda ex: ex.reanchor_counts(
            anchor_names, models, config, endpoints=endpoints, progress=bar), reading=not endpoints)
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
