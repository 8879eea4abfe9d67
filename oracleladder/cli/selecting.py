"""The options of every command that reads a student's results: which of them (the store may hold a
student's results at several settings, which a command never pools: `experiment.selection`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..experiment import Choice

MaxTokensPick = Annotated[Optional[int], typer.Option(
    "--max-tokens", min=1, help="Read the results made at this --max-tokens (where a student has several).")]
TemperaturePick = Annotated[Optional[float], typer.Option(
    "--temperature", help="Read the results made at this temperature (where a student has several).")]
GraderPick = Annotated[Optional[str], typer.Option(
    "--grader", help="Read the results graded by this grader (where a student has several).")]
RunPick = Annotated[Optional[str], typer.Option(
    "--run", help="Read the results of the settings of this run (an id from `ladder runs`).")]
KPick = Annotated[Optional[int], typer.Option(
    "--k", min=1, help="Read the first K samples per condition and milestone (default: all).")]
ByRunOpt = Annotated[bool, typer.Option(
    "--by-run", help="Where a student has results at several settings, show each side by side, as a column "
                     "STUDENT@setting=value.")]


def choice(max_tokens: int | None = None, temperature: float | None = None, grader: str | None = None,
           run: str | None = None, k: int | None = None, by_run: bool = False) -> Choice:
    return Choice(max_tokens=max_tokens, temperature=temperature, grader=grader, run=run, k=k, by_run=by_run)
