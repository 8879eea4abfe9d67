"""What every table module shares: how values are stored (JSON, zstd-packed text, timestamps) and
the one filter builder."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import zstandard
from pydantic import BaseModel

COMPRESS_FROM = 512  # bytes; shorter texts gain little from compression and stay plain text

# the order of granularities when any will do: an unspecified one, then "default", then the others
GRAN_ORDER = "CASE granularity WHEN '' THEN 0 WHEN 'default' THEN 1 ELSE 2 END, granularity"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def to_json(obj: Any) -> str:
    if isinstance(obj, BaseModel):
        return obj.model_dump_json()
    return json.dumps(obj, ensure_ascii=False, default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if hasattr(obj, "as_dict"):
        return obj.as_dict()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def pack(text: str) -> str | bytes:
    """A text as stored: itself, or when long its zstd-compressed UTF-8 (a BLOB)."""
    data = text.encode()
    return text if len(data) < COMPRESS_FROM else zstandard.compress(data, 3)


def unpack(value: str | bytes) -> str:
    return zstandard.decompress(value).decode() if isinstance(value, bytes) else value


def gran(granularity: str | None) -> str:
    return granularity or ""


def where(filters: dict[str, Any], *always: str) -> tuple[str, list[Any]]:
    """A WHERE clause: every condition of ``always``, and ``column = ?`` for each filter whose value
    is not None ('' when there is no condition), with its parameters."""
    conditions, params = list(always), []
    for column, value in filters.items():
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(conditions) if conditions else ""), params
