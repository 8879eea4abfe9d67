"""``reviews``: the automated rubric review of a student's composition-gap families (`ladder audit review`,
Table 42), one label per student and family; a later review replaces it."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ..schemas.rubric import RubricLabel
from .core import Core
from .rows import now, where


class Review(BaseModel):
    """A reviewer on one family of a student: its label, or None (unreviewed: no reply in the JSON asked
    for, after one re-ask; never a category), and why."""

    student: str
    source: str
    pid: str
    reviewer: str
    prompt: str  # audit_review@<version>
    label: RubricLabel | None
    reason: str = ""
    run_id: str = ""


_COLUMNS = ("student", "source", "pid", "reviewer", "prompt", "label", "reason", "run_id")
_PUT = (f"INSERT OR REPLACE INTO reviews ({', '.join(_COLUMNS)}, created_at) "
        f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})")


class ReviewsTable(Core):
    async def put_review(self, r: Review, *, wait: bool = True) -> None:
        """Store a family's review, replacing an earlier one of the same student."""
        row: dict[str, Any] = {**r.model_dump(), "label": None if r.label is None else r.label.model_dump_json()}
        await self._submit(_PUT, (*(row[c] for c in _COLUMNS), now()), wait)

    async def reviews(self, student: str | None = None, source: str | None = None) -> list[Review]:
        sql, params = where({"student": student, "source": source})
        rows = await self._fetch(f"SELECT {', '.join(_COLUMNS)} FROM reviews{sql} ORDER BY rowid", params)
        return [Review(**{**dict(r), "label": None if r["label"] is None else json.loads(r["label"])}) for r in rows]
