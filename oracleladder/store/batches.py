"""The store's ``batches`` table: every batch submitted to a provider's batch API (``--batch``), with
the call keys it holds (its custom_ids), written before its create call under a provisional id (state
``creating``) that the provider's id replaces the moment the provider returns it."""

from __future__ import annotations

import json

from pydantic import BaseModel

from .core import Core
from .rows import now, where

CREATING, SUBMITTED = "creating", "submitted"  # a batch's states before its first poll
RESULTS_EMPTY = "results_empty"  # a batch completed with no results row: not read again, its calls go anew

_COLUMNS = "id, provider, endpoint, model, state, requests, succeeded, failed, custom_ids, run_id, created_at, updated_at"


class BatchRecord(BaseModel):
    """One provider batch as the store keeps it, and what the last poll said of it."""

    id: str  # the provider's, or an intent's provisional one (before its create call returned)
    provider: str  # openai | anthropic
    endpoint: str | None  # the server's normalized base URL; None for the provider's own
    model: str
    state: str  # creating (an intent), submitted, then the provider's word: validating, in_progress, completed, ...
    requests: int
    succeeded: int = 0
    failed: int = 0
    custom_ids: list[str]  # the call keys of its rows
    run_id: str | None = None
    created_at: str
    updated_at: str


class BatchTable(Core):
    """The ``batches`` table's reads and writes (a part of ``Store``)."""

    async def put_batch(self, b: BatchRecord) -> None:
        """Store a batch; returns once it is committed."""
        await self._submit(f"INSERT OR REPLACE INTO batches ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           (b.id, b.provider, b.endpoint, b.model, b.state, b.requests, b.succeeded, b.failed,
                            json.dumps(b.custom_ids), b.run_id, b.created_at, b.updated_at))

    async def update_batch(self, batch_id: str, state: str, succeeded: int, failed: int) -> None:
        await self._submit("UPDATE batches SET state = ?, succeeded = ?, failed = ?, updated_at = ? WHERE id = ?",
                           (state, succeeded, failed, now(), batch_id))

    async def adopt_batch(self, intent: str, batch_id: str) -> None:
        """The batch stored as the intent ``intent`` (its provisional id) has the provider's id ``batch_id``
        (replacing a row of that id, as ``put_batch`` does: a provider that deleted a batch may reuse its id)."""
        await self._submit("UPDATE OR REPLACE batches SET id = ?, state = ?, updated_at = ? WHERE id = ?",
                           (batch_id, SUBMITTED, now(), intent))

    async def delete_batch(self, batch_id: str) -> None:
        """Forget an intent the provider made no batch for."""
        await self._submit("DELETE FROM batches WHERE id = ?", (batch_id,))

    async def batches(self, provider: str | None = None, endpoint: str | None = None, *,
                      any_endpoint: bool = True) -> list[BatchRecord]:
        """The stored batches, oldest first: all, or one provider's (at one endpoint unless ``any_endpoint``)."""
        sql, params = where({"provider": provider})
        if not any_endpoint:
            sql += (" AND" if sql else " WHERE") + " endpoint IS ?"
            params.append(endpoint)
        rows = await self._fetch(f"SELECT {_COLUMNS} FROM batches{sql} ORDER BY created_at, rowid", params)
        return [BatchRecord(id=r["id"], provider=r["provider"], endpoint=r["endpoint"], model=r["model"],
                            state=r["state"], requests=r["requests"], succeeded=r["succeeded"], failed=r["failed"],
                            custom_ids=json.loads(r["custom_ids"]), run_id=r["run_id"],
                            created_at=r["created_at"], updated_at=r["updated_at"]) for r in rows]
