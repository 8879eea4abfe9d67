"""`ladder screen`, `funnel` and `reanchor`: which compiled families enter a diagnostic set, the
funnel from candidates to the final set, and whether the anchor of the screen changes the ranking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

from .._lazy import lazy_module
from ..construction.funnel import into_report
from ..construction.screen import STRUCTURAL
from ..experiment import ProbeResult
from ..report import console as terminal
from ..store import DEFAULT_STORE
from .common import (EXIT_INCOMPLETE, GraderOpt, KOpt, RayOpt, ShardOpt, SourceOpt, StoreOpt, WorkersOpt, cluster_of,
                     console, existing, fail, listed, make_endpoint, run_experiment, say, shard_of,
                     with_endpoint_options)
from .display import bar, print_failed_jobs

if TYPE_CHECKING:
    from ..construction import reanchor as _reanchor
else:  # SciPy behind it: loaded by the command that uses it, not by `ladder --help`
    _reanchor = lazy_module("oracleladder.construction.reanchor")


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
    shard: ShardOpt = None,
    ray: RayOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Anchor screen and structural filter (Section 3): which compiled families enter a diagnostic set."""
    split, cluster = shard_of(shard), cluster_of(ray, workers)
    endpoint = make_endpoint(anchor, endpoint_options)
    result = run_experiment(store, lambda ex: ex.screen(
        endpoint, source=source, set_name=set_name, k=k, max_tokens=max_tokens, rule=rule, temperature=temperature,
        grader=grader, shard=split, progress=bar), endpoint, cluster=cluster)
    if as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        v = result.verdicts
        say(f"set '{result.set_name}': kept {v.get('kept', 0)} of {sum(v.values())}; unusable reference answer "
            f"{v.get('reference_answer', 0)}, solved directly "
            f"{v.get('solved_directly', 0)}, a milestone never solved {v.get('milestone_unsolved', 0)}, "
            f"fewer than 2 tested milestones {v.get(STRUCTURAL, 0)}, incomplete {v.get('incomplete', 0)}; "
            f"{result.usage.requests} requests, {result.usage.cache_hits} cache hits")
    print_failed_jobs(result.failed_jobs, result.ungraded, anchor, source)
    if result.failed_jobs or result.ungraded:
        raise typer.Exit(EXIT_INCOMPLETE)


def funnel(
    set_name: Annotated[Optional[str], typer.Option("--set", help="The set of `ladder screen --set NAME` (default: the store's only set).")] = None,
    source: Annotated[Optional[str], typer.Option("--source", help="Instead of a set: the compile steps of this teacher's roadmap set, before any screen.")] = None,
    dropped: Annotated[bool, typer.Option("--dropped", help="Also list every dropped problem with its stage and reason.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="Folder whose report.json gets the funnel (under \"funnel\"; other keys kept).")] = None,
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
        anchor_names = listed(anchors)
        models = list(dict.fromkeys(anchor_names + listed(students)))
        if endpoint_options["base_url"]:
            for model in models:
                endpoint = make_endpoint(model, endpoint_options)
                probed: ProbeResult = run_experiment(store, lambda ex: ex.probe(
                    endpoint, k=k, conditions=_reanchor.PARENT_PROBES, max_tokens=max_tokens,
                    temperature=temperature, source=source, progress=bar), endpoint)
                say(f"{model}: {probed.usage.requests} requests, {probed.usage.cache_hits} cache hits")
        subsets, gaps, incomplete = run_experiment(store, lambda ex: ex.gap_counts(
            anchor_names, models, source=source, k=k, max_tokens=max_tokens, temperature=temperature), reading=True)
        table = _reanchor.reanchor(gaps, subsets)
    if as_json:
        typer.echo(json.dumps(table.model_dump(mode="json") | {"incomplete": incomplete}))
        return
    if anchors:
        console.print(terminal.anchor_counts_table(table))
    console.print(terminal.tau_table(table))
    console.print(terminal.tau_summary(table), highlight=False)
    if incomplete:
        say(f"{len(incomplete)} families left out: some model lacks graded rollouts there (probe it, or regrade)")
