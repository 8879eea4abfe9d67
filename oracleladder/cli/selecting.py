"""The options of every command that reads a student's results: which of them (the store may hold a
student's results at several settings, which a command never pools: `experiment.selection`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from ..experiment import Choice
from ..experiment.configs import Budgeted, flag_of
from .common import Options, RunPick, with_group

BUDGET = flag_of(Budgeted, "max_tokens").decls  # the option's one spelling, here a filter

# name -> (option, default): what `with_choice` gives a command, each a field of Choice
PICK_OPTIONS: Options = {
    "max_tokens": (Annotated[int | None, typer.Option(
        BUDGET, min=1, help=f"Read the results made at this {BUDGET} (where a student has several).")],
        None),
    "temperature": (Annotated[float | None, typer.Option(
        "--temperature", help="Read the results made at this temperature (where a student has several).")], None),
    "grader": (Annotated[str | None, typer.Option(
        "--grader", help="Read the results graded by this grader (where a student has several).")], None),
    "prompt": (Annotated[str | None, typer.Option(
        "--prompt", metavar="NAME@VERSION", help="Read the results made with this version of a prompt template "
        "(as the settings line spells it; `unknown`: runs recorded before runs said).")], None),
    "run": (RunPick, None),
    "k": (Annotated[int | None, typer.Option(
        "--k", min=1, help="Read the first K samples per condition and milestone (default: all).")], None),
}
BY_RUN = (Annotated[bool, typer.Option(
    "--by-run", help="Where a student has results at several settings, show each side by side, as a column "
                     "STUDENT@setting=value.")], False)


def with_choice(*, by_run: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Gives a command the options that pick a student's results (PICK_OPTIONS, and with ``by_run``
    --by-run) in place of its ``picked`` parameter, which receives their Choice."""
    options = PICK_OPTIONS | ({"by_run": BY_RUN} if by_run else {})

    return lambda command: with_group(command, "picked", options, lambda given: Choice(**given))
