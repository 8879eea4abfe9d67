"""The store's ``batches`` table: every batch submitted to a provider's batch API (``--batch``), with
the call keys it holds (its custom_ids), written the moment the provider returns its id."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clients.batch import BatchRecord, now

_COLUMNS = "id, provider, endpoint, model, state, requests, succeeded, failed, custom_ids, run_id, created_at, updated_at"


class BatchTable:
    """The ``batches`` table's reads and writes (a part of ``Store``)."""

    if TYPE_CHECKING:  # Store's own
        async def _submit(self, sql: str, params: Sequence[Any], wait: bool = True) -> None: ...

        async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row | tuple[Any, ...]]: ...

    async def put_batch(self, b: BatchRecord) -> None:
        """Store a batch; returns once it is committed."""
        await self._submit(f"INSERT OR REPLACE INTO batches ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           (b.id, b.provider, b.endpoint, b.model, b.state, b.requests, b.succeeded, b.failed,
                            json.dumps(b.custom_ids), b.run_id, b.created_at, b.updated_at))

    async def update_batch(self, batch_id: str, state: str, succeeded: int, failed: int) -> None:
        await self._submit("UPDATE batches SET state = ?, succeeded = ?, failed = ?, updated_at = ? WHERE id = ?",
                           (state, succeeded, failed, now(), batch_id))

    async def batches(self, provider: str | None = None, endpoint: str | None = None, *,
                      any_endpoint: bool = True) -> list[BatchRecord]:
        """The stored batches, oldest first: all, or one provider's (at one endpoint unless ``any_endpoint``)."""
        sql, params = f"SELECT {_COLUMNS} FROM batches WHERE 1=1", []
        if provider is not None:
            sql += " AND provider = ?"
            params.append(provider)
        if not any_endpoint:
            sql += " AND endpoint IS ?"
            params.append(endpoint)
        rows = await self._fetch(sql + " ORDER BY created_at, rowid", params)
        return [BatchRecord(id=r[0], provider=r[1], endpoint=r[2], model=r[3], state=r[4], requests=r[5],
                            succeeded=r[6], failed=r[7], custom_ids=json.loads(r[8]), run_id=r[9],
                            created_at=r[10], updated_at=r[11]) for r in rows]
