"""``reports``: the validation report of each family (or packet)."""

from __future__ import annotations

from ..schemas.models import FamilyReport
from .core import Core
from .rows import GRAN_ORDER, gran, now, where

_PUT = """
INSERT OR REPLACE INTO reports (pid, source, granularity, report, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""


class ReportsTable(Core):
    async def put_report(self, report: FamilyReport, source: str, *,
                         granularity: str | None = None, wait: bool = True) -> None:
        params = (report.pid, source, gran(granularity), report.model_dump_json(),
                  int(report.passed), now())
        await self._submit(_PUT, params, wait)

    async def get_report(self, pid: str, source: str,
                         granularity: str | None = None) -> FamilyReport | None:
        """``granularity=None`` takes any granularity, preferring an unspecified one, then "default"."""
        sql, params = where({"pid": pid, "source": source, "granularity": granularity})
        rows = await self._fetch(f"SELECT report FROM reports{sql} ORDER BY {GRAN_ORDER} LIMIT 1", params)
        return FamilyReport.model_validate_json(rows[0]["report"]) if rows else None

    async def reports(self, source: str | None = None) -> list[FamilyReport]:
        sql, params = where({"source": source})
        rows = await self._fetch(f"SELECT report FROM reports{sql} ORDER BY rowid", params)
        return [FamilyReport.model_validate_json(r["report"]) for r in rows]
