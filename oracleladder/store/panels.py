"""``panel_cells``: imported panels, a published model's n_correct of k per family and condition (or
Stage 0 milestone, "m<i>"), with no rollout behind them (`ladder panels import`)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from .core import Core
from .rows import where


class PanelCell(BaseModel):
    """One imported count: ``n_correct`` of ``k`` attempts of ``student`` on ``pid``'s ``target``."""

    student: str
    source: str
    pid: str
    target: str  # a condition, or "m<i>" for the i-th milestone alone (Stage 0)
    n_correct: int
    k: int
    run_id: str


_PUT = """
INSERT OR REPLACE INTO panel_cells (student, source, pid, target, n_correct, k, run_id)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""


class PanelsTable(Core):
    async def put_panel_cells(self, cells: Iterable[PanelCell]) -> None:
        """Store imported counts in one transaction (a cell imported again replaces the earlier one)."""
        rows = tuple((c.student, c.source, c.pid, c.target, c.n_correct, c.k, c.run_id) for c in cells)
        await self._submit_all((_PUT,) * len(rows), rows)

    async def panel_cells(self, student: str | None = None, *, source: str | None = None) -> list[PanelCell]:
        """Imported counts, filtered by student and source; in import order."""
        sql, params = where({"student": student, "source": source})
        rows = await self._fetch("SELECT student, source, pid, target, n_correct, k, run_id FROM panel_cells"
                                 + sql + " ORDER BY rowid", params)
        return [PanelCell(**dict(r)) for r in rows]
