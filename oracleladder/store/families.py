"""``families``: the roadmaps, one per (pid, source, granularity), with their released records."""

from __future__ import annotations

import json
from typing import Any

from ..schemas.models import Family, to_released
from .core import Core
from .rows import GRAN_ORDER, gran, now, pack, to_json, unpack, where

_PUT = """
INSERT INTO families (pid, source, granularity, family, released, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(pid, source, granularity) DO UPDATE SET
    family = excluded.family, released = excluded.released, updated_at = excluded.updated_at
"""


class FamiliesTable(Core):
    async def put_family(self, family: Family, *, wait: bool = True) -> None:
        """Store a family under (pid, provenance.source, provenance.granularity), replacing any
        earlier one there; keeps the full Family JSON and its released record (packed: rows.pack)."""
        t = now()
        params = (family.pid, family.provenance.source, gran(family.provenance.granularity),
                  pack(family.model_dump_json()), pack(to_json(to_released(family))), t, t)
        await self._submit(_PUT, params, wait)

    async def get_family(self, pid: str, source: str = "release",
                         granularity: str | None = None) -> Family | None:
        """The family of ``pid`` from ``source``. ``granularity=None`` takes any granularity,
        preferring an unspecified one, then "default"."""
        sql, params = where({"pid": pid, "source": source, "granularity": granularity})
        rows = await self._fetch(f"SELECT family FROM families{sql} ORDER BY {GRAN_ORDER} LIMIT 1", params)
        return Family.model_validate_json(unpack(rows[0]["family"])) if rows else None

    async def families(self, source: str | None = None,
                       granularity: str | None = None) -> list[Family]:
        """Stored families in insertion order, optionally of one source and/or granularity."""
        rows = await self._families("family", source, granularity)
        return [Family.model_validate_json(unpack(r["family"])) for r in rows]

    async def released_records(self, source: str | None = None,
                               granularity: str | None = None) -> list[dict[str, Any]]:
        """The released-format records of stored families, in insertion order."""
        return [json.loads(unpack(r["released"])) for r in await self._families("released", source, granularity)]

    async def sources(self) -> list[str]:
        return [r["source"] for r in await self._fetch("SELECT DISTINCT source FROM families ORDER BY source")]

    async def _families(self, column: str, source: str | None, granularity: str | None) -> list[Any]:
        sql, params = where({"source": source, "granularity": granularity})
        return await self._fetch(f"SELECT {column} FROM families{sql} ORDER BY rowid", params)
