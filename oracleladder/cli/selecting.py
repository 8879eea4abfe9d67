"""The options of every command that reads a student's results: which of them (the store may hold a
student's results at several settings, which a command never pools: `experiment.selection`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..experiment import Choice
from ..experiment.configs import Budgeted, flag_of

BUDGET = flag_of(Budgeted, "max_tokens").decls  # the option's one spelling, here a filter

RunPick = Annotated[str | None, typer.Option(
    "--run", help="Read the results of the settings of this run (an id from `ladder runs`).")]
# name -> (option, default): what `with_choice` gives a command, each a field of Choice
PICK_OPTIONS: dict[str, tuple[Any, Any]] = {
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

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        params = []
        for p in inspect.signature(command, eval_str=True).parameters.values():
            if p.name == "picked":
                params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=option, default=default)
                           for name, (option, default) in options.items()]
            else:  # keyword-only: typer passes every option by name, and the order stays the help's
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))

        @functools.wraps(command)
        def picking(**kwargs: Any) -> None:
            picked = Choice(**{name: kwargs.pop(name) for name in options})
            command(**kwargs, picked=picked)

        picking.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return picking
    return wrap
