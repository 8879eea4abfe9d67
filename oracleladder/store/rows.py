"""What every table module shares: how values are stored (JSON, zstd-packed text, timestamps), the
one filter builder, and the process a run or a claim names (is it still running?)."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import zstandard
from pydantic import BaseModel

MAX_INTEGER = 2**63 - 1  # the largest integer a SQLite column holds: a larger one is refused before a write
COMPRESS_FROM = 512  # bytes; shorter texts gain little from compression and stay plain text
# zstd's level 5 makes a released answer 6% smaller than level 3 for 0.15 ms more CPU (10,000
# characters: 0.34 ms against 0.19); higher levels gain little more (9: 8%) for far more time
ZSTD_LEVEL = 5

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
    return text if len(data) < COMPRESS_FROM else zstandard.compress(data, ZSTD_LEVEL)


def unpack(value: str | bytes) -> str:
    return zstandard.decompress(value).decode() if isinstance(value, bytes) else value


def stored_text(value: str | bytes | None) -> str | None:
    """A stored text read back however it was packed (NULL stays NULL): the SQL function
    ``ladder_text``, so that texts packed at another zstd level or not at all compare equal."""
    return None if value is None else unpack(value)


def pack_key(key: str) -> str | bytes:
    """A call key as stored: a sha256 hex digest (``ChatRequest.key()``) as its 32 bytes, any other
    key as it is."""
    try:
        raw = bytes.fromhex(key)
    except ValueError:
        return key
    return raw if len(raw) == 32 and raw.hex() == key else key


def unpack_key(value: str | bytes) -> str:
    return value.hex() if isinstance(value, bytes) else value


def name_id(expr: str) -> str:
    """SQL for the id in ``names`` of the string ``expr`` (a parameter or a column)."""
    return f"(SELECT id FROM names WHERE name = {expr})"


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


def _process_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot; Linux), so that a reused pid is told
    apart from the process that had it; '' where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def process_owner(pid: int) -> str:
    """A process as a run or a claim records it: host, pid and start (a reused pid is another)."""
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}"


def process_gone(owner: str) -> bool:
    """Whether the process ``process_owner`` named no longer runs; only known on its own host."""
    host, pid, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    return start != _process_start(int(pid))
