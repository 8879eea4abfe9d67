"""The store file's own integrity check (the ``meta`` table itself is kept for the stores that hold it)."""

from __future__ import annotations

from .core import Core


class MetaTable(Core):
    async def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: "ok" when the file is sound."""
        rows = await self._fetch("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)
