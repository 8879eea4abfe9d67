"""The `ladder` command line: one subcommand per stage of the pipeline, a thin layer over the Python
API (oracleladder.experiment): each command parses its options, calls an Experiment, prints.

The commands live by group (`store`, `compiling`, `probing`, `reporting`, `construction`, `audit`, `panels`),
what they share in `common` and `display`; they are registered below in the order `ladder --help`
lists them."""

from __future__ import annotations

import sqlite3
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from .. import __version__
from ..clients import ConfigurationError, ProviderError
from ..clients.errors import Spelled
from ..experiment import EndpointError, ExperimentError
from ..schemas.jsonl import InputError
from ..store import StoreError
from . import audit, compiling, construction, inspecting, panels, prim, probing, reporting, store
from .common import fail

# The project's own errors carry a one-line message that says what to do: printed as that line
# (with --debug, with its traceback).
USER_ERRORS = (InputError, ExperimentError, StoreError, ConfigurationError, ProviderError, sqlite3.Error)


class _Ladder(TyperGroup):
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # typer's own Context, a click one
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:  # a subcommand's option refused: one line, not a panel
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx else ""
            fail(exc.format_message() + where)
        except USER_ERRORS as exc:
            if ctx.meta.get("debug"):
                raise
            said = exc.cli_message() if isinstance(exc, Spelled) else str(exc)  # its options as flags
            fail(f"store: {exc}" if isinstance(exc, sqlite3.Error) else said,
                 code=2 if isinstance(exc, (InputError, ExperimentError, EndpointError)) else 1)


# click's own help (rich_markup_mode=None): it wraps at any width, where rich's panels cut option names
app = typer.Typer(cls=_Ladder, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="OracleLadder: where does LLM reasoning fail?")
app.add_typer(audit.app, name="audit")
app.add_typer(panels.app, name="panels")
app.add_typer(prim.app, name="prim")


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"ladder {__version__}")
        raise typer.Exit()


@app.callback()
def _options(ctx: typer.Context,
             debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")] = False,
             version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                   help="Print the version and exit.")] = False) -> None:
    ctx.meta["debug"] = debug


app.command("import")(store.import_)
app.command()(store.export)
app.command()(probing.verify)
app.command()(compiling.compile)
app.command()(compiling.check)
app.command()(compiling.attempts)
app.command()(probing.probe)
app.command()(reporting.report)
app.command()(reporting.export_results)
app.command()(reporting.view)
app.command()(probing.regrade)
app.command()(probing.benchmark)
app.command()(reporting.compare)
app.command()(reporting.replication)
app.command()(store.runs)
app.command()(reporting.demo)
app.command()(construction.screen)
app.command()(construction.funnel)
app.command()(construction.reanchor)
app.command()(store.batches)
app.command()(store.merge)
app.command()(inspecting.export_inspect)
app.command()(inspecting.import_inspect)

__all__ = ["app"]
