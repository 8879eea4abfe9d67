"""`ladder panels`: per-family results out of a store and into one, in the release's panel records
(model, condition, pid, n_correct, k; and the Stage 0 panel per milestone), so that published models sit
beside new ones in one report (`experiment.panels`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..experiment import Choice
from ..store import DEFAULT_STORE
from .common import CorrectionsOpt, SourceOpt, StoreOpt, existing, fail, run_experiment, say
from .selecting import BUDGET, with_choice

app = typer.Typer(no_args_is_help=True, help="Per-family results in the release's panel records: export, import.")


@app.command("export")
@with_choice()
def export(
    student: Annotated[str, typer.Option("--student", help="The student whose results to write.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for oracle_panel/<model>.jsonl and stage0_panel/<model>.jsonl.")],
    model: Annotated[str | None, typer.Option("--model", help="The model name the records carry (default: the student).")] = None,
    source: SourceOpt = "release",
    use_corrections: CorrectionsOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    picked: Choice = Choice(),
) -> None:
    """Write a student's results on a roadmap set at one setting as the release's panel records: one per
    condition and family, and one per tested milestone and family (Stage 0)."""
    existing(store)
    written = run_experiment(store, lambda ex: ex.export_panels(
        student, out, source=source, model=model, use_corrections=use_corrections, choice=picked), reading=True)
    if not written.records:
        fail(f"{student} has no graded results on '{source}' to write")
    for line in written.warnings:
        say(f"warning: {line}")
    say(f"wrote {written.records} panel records of {student}: {written.oracle} and {written.stage0}")


@app.command("import")
def import_(
    files: Annotated[list[Path], typer.Argument(help="Panel files (the release's oracle_panel_16k/*.jsonl, stage0 panels).")],
    source: Annotated[str, typer.Option(help="The roadmap set the panels were made on (imported first).")] = "release",
    student: Annotated[str | None, typer.Option("--student", help="File every record under this student (default: each record's model).")] = None,
    max_tokens: Annotated[int | None, typer.Option(BUDGET, min=1, help=f"The {BUDGET} the panel was made at (the release's 16k panels: 16384), stated in the report.")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature", min=0.0, help="The temperature the panel was made at, stated in the report.")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="The grader of the panel's verdicts (the release's: paper), stated in the report.")] = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Import panel records into a store: each model a student whose results show in reports as an
    imported panel (no rollouts), at the settings stated here."""
    existing(store)
    for f in files:
        if not f.is_file():
            fail(f"{f}: no such file")
    imported = run_experiment(store, lambda ex: ex.import_panels(files, source=source, student=student,
                                                                 max_tokens=max_tokens, temperature=temperature,
                                                                 grader=grader))
    for name, n in imported.counts.items():
        for line in imported.warnings[name]:
            say(f"warning: {line}")
        say(f"imported {n} panel records of {name} into {store} (source '{source}')")
    if imported.left_out:
        say(f"left out {imported.left_out} records on families not in '{source}'")
