"""The `ladder` command line: one subcommand per stage of the pipeline."""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from .schemas import Family, to_released
from .schemas.jsonl import InputError, read_jsonl, write_jsonl

app = typer.Typer(add_completion=False, no_args_is_help=True, help="OracleLadder: where does LLM reasoning fail?")
console = Console(stderr=True)

StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of this experiment.")]
DEFAULT_STORE = Path("ladder.sqlite")
DEMO_FAMILIES = resources.files("oracleladder.data") / "families_demo.jsonl"


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


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
    from .probe.verify import verify as run_verify

    verdict = run_verify(response, gold, extended=extended, problem=problem)
    if as_json:
        typer.echo(json.dumps({"label": verdict.label.value, "reason": verdict.reason, "extracted": verdict.extracted}))
    else:
        typer.echo(f"{verdict.label.value}: {verdict.reason}")


def _not_yet(command: str, issue: int) -> None:
    _fail(f"`ladder {command}` is not implemented yet (tracked in issue {issue}).", code=3)


@app.command()
def compile() -> None:  # noqa: A001 - the CLI verb of ARCHITECTURE.md
    """Compile milestone families with a teacher (issue 4)."""
    _not_yet("compile", 4)


@app.command()
def probe() -> None:
    """Probe a student: Stage 0 and the ladder (issue 5)."""
    _not_yet("probe", 5)


@app.command()
def report() -> None:
    """Outcome and taxonomy tables, controls, CIs, plots (issue 5)."""
    _not_yet("report", 5)


@app.command()
def compare() -> None:
    """Compare two teachers or granularities (issue 5)."""
    _not_yet("compare", 5)


@app.command()
def demo() -> None:
    """The pipeline so far on the embedded default model and sample families, offline.

    Until the store and the prober land, it reads the sample families, asks the embedded model
    one milestone, and grades the answer.
    """
    families = _load_families(Path(str(DEMO_FAMILIES)))
    console.print(f"read {len(families)} sample families from the OracleLadder release")
    asyncio.run(_demo_local_call(families[0]))


async def _demo_local_call(family: Family) -> None:
    from .clients.base import ChatRequest
    from .clients.local import DEFAULT_MODEL, LocalProvider
    from .probe.prompts import stage0_prompt
    from .probe.verify import verify as run_verify

    index, milestone = family.tested()[0]
    provider = LocalProvider()
    request = ChatRequest(provider="local", model=DEFAULT_MODEL, messages=stage0_prompt(milestone),
                          params={"max_tokens": 256, "temperature": 0.0})
    with console.status("local model answering one milestone"):
        result = await provider.complete(request)
    await provider.aclose()
    verdict = run_verify(result.text, milestone.answer)
    console.print(f"milestone {index} of {family.pid} ({result.tokens_out} tokens):\n{result.text}")
    console.print(f"gold {milestone.answer!r}: {verdict.label.value} ({verdict.reason})")


if __name__ == "__main__":
    app()
