"""`ladder import`, `export`, `runs`, `batches` and `merge`: families into and out of the store, the
store's runs and provider batches, and stores made apart combined into one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from ..experiment.croissant import write_metadata
from ..report.palette import n_families
from ..store import DEFAULT_STORE
from ..store.merge import merge_stores
from .common import ApiKeyEnvOpt, OnDuplicate, OnDuplicateOpt, StoreOpt, console, existing, fail, run_experiment, say


def import_(
    families: Annotated[Path, typer.Argument(help="Families in the released OracleLadder record format.")],
    store: StoreOpt = DEFAULT_STORE,
    source: Annotated[str, typer.Option(help="Name the families are filed under.")] = "release",
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
    corrections: Annotated[Path | None, typer.Option("--corrections", help="The release's corrections.jsonl, merged into the families' correction fields (parent_answer_corrected, correction_note, milestone_gold_invalid); each is listed.")] = None,
) -> None:
    """Import released-format milestone families into the store; the milestones whose gold restates the
    reference answer, or whose description or prompt states it, are listed (the leak rule leaves them
    out of Stage 0, C2 and C3), and a primitive that states a gold is listed and dropped."""
    result = run_experiment(store, lambda ex: ex.import_families(families, source=source,
                                                                 on_duplicate=on_duplicate.value,
                                                                 corrections=corrections))
    for c in result.corrections:
        change = (f"{c.original!r} -> {c.corrected!r}" if c.corrected is not None
                  else f"golds {c.original!r} marked invalid")
        say(f"corrected {c.pid} {c.field}: {change}")
    for pid, leaking in result.leaking.items():
        shown = {c.milestone: c for c in result.shown_leaks.get(pid, [])}
        if golds := [i for i in leaking if i not in shown]:
            say(f"leak rule: {pid} milestone(s) {', '.join(f'm{i}' for i in golds)} restate the reference answer: "
                "left out of Stage 0, C2 and C3 (`ladder probe --keep-leaking` keeps them)")
        for i in (i for i in leaking if i in shown):
            say(f"leak rule: {pid} m{i} [{shown[i].check}] {shown[i].reason}: left out of Stage 0, C2 and C3")
    for pid, checks in result.shown_leaks.items():
        for check in (x for x in checks if x.milestone is None):
            say(f"leak rule: {pid} primitive [{check.check}] {check.reason}: dropped")
    say(f"imported {n_families(result.families)} from {families} into {store} (source '{source}')"
                  + (f" with {len(result.corrections)} corrections" if result.corrections else ""))


def export(
    out: Annotated[Path, typer.Option("--out", help="JSONL file to write.")],
    store: StoreOpt = DEFAULT_STORE,
    teacher: Annotated[str | None, typer.Option(help="Only families from this source/teacher (TEACHER@coarse|fine: one granularity of it).")] = None,
    set_name: Annotated[str | None, typer.Option("--set", help="Only the final set of `ladder screen --set NAME`, with pre_train_phat the anchor's Stage 0 solve rate.")] = None,
    croissant: Annotated[bool, typer.Option("--croissant", help="Also write croissant.json beside OUT: the set's Croissant 1.0 metadata, as the release ships it.")] = False,
    name: Annotated[str | None, typer.Option("--name", help="With --croissant: the data set's name (default OUT's file name without .jsonl).")] = None,
    license_url: Annotated[str | None, typer.Option("--license", help="With --croissant: the data set's license, a URL (e.g. https://creativecommons.org/licenses/by/4.0/).")] = None,
) -> None:
    """Export families in the released OracleLadder record format (with --croissant, its Croissant metadata too)."""
    existing(store)
    if (name or license_url) and not croissant:
        fail("--name and --license describe the Croissant metadata: give --croissant too")
    n = run_experiment(store, lambda ex: ex.export(out, teacher=teacher, set_name=set_name), reading=True)
    console.print(f"wrote {n_families(n)} to {out}")
    if croissant:
        which = f"the final set '{set_name}'" if set_name else f"the roadmap set '{teacher}'" if teacher else "every family"
        meta = write_metadata(out, name=name or out.stem, license_url=license_url,
                              description=f"OracleLadder milestone families ({n_families(n)}, {which} of {store.name}).")
        console.print(f"wrote its Croissant metadata to {meta}")


def runs(store: StoreOpt = DEFAULT_STORE) -> None:
    """The runs of a store with their status (running, done, interrupted), tokens and cost."""
    existing(store)
    for run in run_experiment(store, lambda ex: ex.runs(), reading=True):
        cost = "" if run.cost_usd is None else f" ${run.cost_usd:.4f}"
        typer.echo(f"{run.id}\t{run.status}\t{run.started_at}\t{run.finished_at or '-'}\t"
                   f"tokens {run.tokens_in} in / {run.tokens_out} out{cost}"
                   + (f"\treused {run.reused} answers from earlier runs" if run.reused else ""))


def batches(
    store: StoreOpt = DEFAULT_STORE,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel every batch still in flight (stop the run that waits on them first: it would submit the cancelled rows again).")] = False,
    api_key_env: ApiKeyEnvOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per batch.")] = False,
) -> None:
    """List the store's provider batches (`--batch`) with their states, as of their last poll."""
    existing(store)
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


def merge(
    sources: Annotated[list[Path], typer.Argument(help="The stores to merge (the shards of a run, made on several machines).")],
    into: Annotated[Path, typer.Option("--into", help="The store they are merged into (created if missing; what it holds is kept).")],
    prefer: Annotated[Path | None, typer.Option("--prefer", metavar="SRC", help="Where two stores hold different answers under one call key, or different families under one pid, keep SRC's (default: the first, which --into holds or the earlier SRC gave).")] = None,
) -> None:
    """Merge stores made apart into one, by content: each call kept once, every difference said in one line.
    Idempotent: a source merged again adds nothing; a merge cut short is resumed by running it again."""
    try:
        result = asyncio.run(merge_stores(into, sources, prefer=prefer))
    except ValueError as exc:
        fail(str(exc))
    for line in result.conflicts:
        say(line)
    added = ", ".join(f"{n} {table}" for table, n in result.added.items() if n)
    say(f"merged {len(sources)} stores into {into}: {added or 'nothing new'}; {len(result.conflicts)} differences")
