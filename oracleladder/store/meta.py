"""``meta``: small named values of the store (JSON), and the file's own integrity check."""

from __future__ import annotations

import json
from typing import Any

from .core import Core
from .rows import to_json


class MetaTable(Core):
    async def set_meta(self, key: str, value: Any) -> None:
        await self._submit("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, to_json(value)))

    async def get_meta(self, key: str, default: Any = None) -> Any:
        rows = await self._fetch("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0]["value"]) if rows else default

    async def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: "ok" when the file is sound."""
        rows = await self._fetch("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)
