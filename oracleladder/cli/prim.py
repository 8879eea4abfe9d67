"""`ladder prim`: PRIM's four-dimension diagnosis beside the ladder (docs/prim.md) — import gold
primitives, probe the four dimensions, score a student's primitives with a judge, report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..store import DEFAULT_STORE
from .common import StoreOpt, console, run_experiment

app = typer.Typer(no_args_is_help=True, help="PRIM's diagnosis: Discovery, Generation, Digestion, Execution.")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="JSONL: pid, essential_property, solution_principle, core_concept, primary_type, secondary_types, family (routed from the primary type when absent), solution.")],
    field: Annotated[Optional[list[str]], typer.Option("--field", help="NAME=COLUMN: read our field NAME from the file's COLUMN (repeat the option).")] = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Import gold primitives and reference solutions; a bad line imports nothing."""
    n = run_experiment(store, lambda ex: ex.import_primitives(file, fields=tuple(field or ())))
    console.print(f"imported {n} gold primitives from {file} into {store}")
