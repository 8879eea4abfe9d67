"""`ladder audit`: the paper's audits of a run, one command each."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ..schemas.models import parse_roadmap_set
from ..store import Store
from . import format as fmt
from . import roadmap

app = typer.Typer(no_args_is_help=True, help="The paper's audits of a run: format, roadmap-match, judge.")
console = Console(stderr=True)

StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of this experiment.")]
StudentOpt = Annotated[str, typer.Option("--student", help="The student whose rollouts to audit.")]
SourceOpt = Annotated[str, typer.Option(help="Which roadmap set: 'release', a teacher model string, or TEACHER@coarse|fine.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
DEFAULT_STORE = Path("ladder.sqlite")


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _reading(path: Path):  # type: ignore[no-untyped-def]
    if not path.is_file():
        _fail(f"{path}: no such store")
    writable = os.access(path, os.W_OK) and os.access(path.absolute().parent, os.W_OK)
    return Store.open(path, readonly=not writable)


async def _format(store_path: Path, student: str, source: str) -> dict:
    async with _reading(store_path) as store:
        return await fmt.format_audit(store, student, source)


@app.command("format")
def format_(student: StudentOpt, source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE,
            as_json: JsonOpt = False) -> None:
    """Format audit (paper Table 24): each rollout as no_boxed, no_boxed_trunc, unparsable,
    parsed_wrong or parsed_correct, per condition; ungraded rollouts and failed jobs apart."""
    audit = asyncio.run(_format(store, student, source))
    if not audit["table"]:
        _fail(f"{store} holds no rollouts of student '{student}' on roadmap set '{source}'")
    if as_json:
        typer.echo(json.dumps(audit))
        return
    for line in fmt.warnings({student: audit}):
        console.print(f"warning: {line}", soft_wrap=True, highlight=False, markup=False)
    typer.echo("\n".join(fmt.markdown({student: audit})))


async def _roadmap(store_path: Path, student: str, source: str) -> dict:
    try:
        name, granularity = parse_roadmap_set(source)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    async with _reading(store_path) as store:
        families = await store.families(source=name, granularity=granularity)
        if not families:
            _fail(f"{store_path} holds no families of roadmap set '{source}'")
        rollouts = await store.rollouts(student=student, source=families[0].provenance.roadmap_set,
                                        target=roadmap.C1)
    if not rollouts:
        _fail(f"{store_path} holds no C1 attempts of student '{student}' on roadmap set '{source}'; "
              f"run `ladder probe --student {student} --conditions C1` first")
    return roadmap.roadmap_match(families, rollouts)


@app.command("roadmap-match")
def roadmap_match(student: Annotated[list[str], typer.Option("--student", help="A student (repeat for several).")],
                  source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Milestone answers in the students' own unaided (C1) attempts (paper Table 35): own rate,
    cross-problem control, ratio, over all golds and over golds the statement does not contain."""
    results = {s: asyncio.run(_roadmap(store, s, source)) for s in student}
    typer.echo(json.dumps(results) if as_json else "\n".join(roadmap.markdown(results)))
