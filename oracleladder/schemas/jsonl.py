"""Reading and writing JSONL records, with errors that name the file, the line and the field."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """A record that cannot be read; the message says where and why."""


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """`` (did you mean 'X'?)`` for the name of ``known`` closest to a mistyped ``name``, else ""."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _field_path(loc: tuple[object, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(record)"


OnDuplicate = Literal["error", "keep-first", "keep-last"]


def read_jsonl(path: str | os.PathLike[str], model: type[M]) -> Iterator[M]:
    """Yield one validated model per non-blank line."""
    for _, record in _numbered(path, model):
        yield record


ON_DUPLICATE_HINT = "remove one, or pass --on-duplicate keep-first or keep-last"


def read_unique(path: str | os.PathLike[str], model: type[M] | Callable[[dict], M], on_duplicate: OnDuplicate = "error",
                key: Callable[[M], Hashable] = lambda r: r.pid,  # type: ignore[attr-defined]
                hint: str = ON_DUPLICATE_HINT) -> list[M]:
    """The records of a file (a model, or a function of the raw record), one per key (the pid): a
    repeated key is an error naming both lines and saying ``hint`` (what to do: a command without
    --on-duplicate says so), or the first or the last of them is kept (at the place of the first)."""
    return unique(_numbered(path, model), path, on_duplicate, key, hint)


def unique(numbered: Iterable[tuple[int, M]], path: str | os.PathLike[str], on_duplicate: OnDuplicate = "error",
           key: Callable[[M], Hashable] = lambda r: r.pid,  # type: ignore[attr-defined]
           hint: str = ON_DUPLICATE_HINT) -> list[M]:
    """One record per key from (line or row number, record) pairs, as `read_unique` says."""
    kept: dict[Hashable, tuple[int, M]] = {}
    for lineno, record in numbered:
        k = key(record)
        if k in kept:
            if on_duplicate == "error":
                raise InputError(f"{path}:{lineno}: pid '{getattr(record, 'pid', k)}' repeats line "
                                 f"{kept[k][0]} ({path}:{kept[k][0]}); {hint}")
            if on_duplicate == "keep-first":
                continue
        kept[k] = (lineno, record)
    return [record for _, record in kept.values()]


def _numbered(path: str | os.PathLike[str], model: type[M] | Callable[[dict], M]) -> Iterator[tuple[int, M]]:
    """(line number, validated model) per non-blank line; every failure is an InputError at its line."""
    parse = cast("Callable[[dict], M]",
                 model.model_validate if isinstance(model, type) and issubclass(model, BaseModel) else model)
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open("rb") as fh:
        for lineno, data in enumerate(fh, start=1):
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column "
                                 f"{exc.start + 1}); is this a JSONL file?") from None
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            except RecursionError:
                raise InputError(f"{path}:{lineno}: JSON nested too deeply to read") from None
            if not isinstance(raw, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(raw).__name__}")
            try:
                record = parse(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
                raise InputError(
                    f"{path}:{lineno}: field '{_field_path(first['loc'])}': {first['msg']}{more}"
                ) from None
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{lineno}: {exc}") from None
            except RecursionError:
                raise InputError(f"{path}:{lineno}: JSON nested too deeply to read") from None
            yield lineno, record


def write_jsonl(path: str | os.PathLike[str], records: Iterable[dict]) -> int:
    """Write dict records one per line; returns how many were written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n
