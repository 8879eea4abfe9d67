"""A command's options made from its stage config (`experiment.configs`): each field one option, with
the field's default and help, and ``--config FILE``, a TOML file of the same fields; a flag given on
the command line overrides the file, the file the fields' defaults."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

from ..experiment.configs import StageConfig, configured, flag_of
from ..experiment.errors import Arg, ExperimentError
from .common import Options, fail, field_option, with_group

ConfigFileOpt = Annotated[Path | None, typer.Option("--config", metavar="FILE", help=(
    "A TOML file of this command's options, by name (max_tokens = 512, or max-tokens); an option given on the "
    "command line overrides the file's."))]


def read_config(path: Path, kind: type[StageConfig]) -> dict[str, Any]:
    """The fields a TOML file gives (keys spelled as the fields are, or with dashes); a file that cannot
    be read, or a key the command does not have, is one line naming the file (exit 2)."""
    try:
        given = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"--config {path}: {exc.strerror}")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        fail(f"--config {path}: not TOML ({exc})")
    values = {key.replace("-", "_"): value for key, value in given.items()}
    for key in given:
        if key.replace("-", "_") not in kind.model_fields:
            fail(f"--config {path}: no option '{key}' here (it has {', '.join(kind.model_fields)})")
    return values


def build_config(kind: type[StageConfig], flags: dict[str, Any], path: Path | None) -> StageConfig:
    """The config of the options given on the command line over those of the file at ``path``; a bad
    value is one line naming the flag or the file and its key (exit 2)."""
    from_file = {} if path is None else read_config(path, kind)
    try:
        return configured(kind, None, {**from_file, **flags})
    except ExperimentError as exc:
        named = exc.parts[0]
        if path is None or (isinstance(named, Arg) and named.name in flags):
            raise
        fail(f"--config {path}: {exc}")


def _given(ctx: typer.Context, name: str) -> bool:
    """The option was given on the command line (or by an environment variable), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def with_config(command: Callable[..., None]) -> Callable[..., None]:
    """Gives a command the options of its config, in place of its parameter annotated with a
    `StageConfig` (which receives the config built from them), and ``--config FILE`` before them."""
    signature = inspect.signature(command, eval_str=True)
    [(slot, kind)] = [(p.name, p.annotation) for p in signature.parameters.values()
                      if isinstance(p.annotation, type) and issubclass(p.annotation, StageConfig)]
    fields = {name: (param.annotation, param.default) for name, field in kind.model_fields.items()
              for param in [field_option(name, field)]}
    options: Options = {"typer_context": (typer.Context, inspect.Parameter.empty),
                        "config_file": (ConfigFileOpt, None), **fields}

    def build(given: dict[str, Any]) -> StageConfig:
        ctx: typer.Context = given["typer_context"]
        flags = {name: not given[name] if flag_of(kind, name).off else given[name] for name in fields
                 if _given(ctx, name)}
        return build_config(kind, flags, given["config_file"])

    return with_group(command, slot, options, build)
