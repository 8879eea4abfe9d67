"""Reading and writing JSONL records, with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """A record that cannot be read; the message says where and why."""


def _field_path(loc: tuple[object, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(record)"


def read_jsonl(path: str | Path, model: type[M]) -> Iterator[M]:
    """Yield one validated model per non-blank line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(raw, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(raw).__name__}")
            try:
                yield model.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
                raise InputError(
                    f"{path}:{lineno}: field '{_field_path(first['loc'])}': {first['msg']}{more}"
                ) from None


def write_jsonl(path: str | Path, records: Iterable[dict]) -> int:
    """Write dict records one per line; returns how many were written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n
