"""The store's core, under every table module: the connections, the group-commit writer, reads, and
the in-memory cache of successful calls.

Writes go through one writer task that commits everything queued in one transaction (group
commit): 64 concurrent puts cost a handful of transactions, not 64. Each put returns once its
transaction is committed (``wait=False`` returns at once; ``flush()`` waits for everything queued).
A crash (even SIGKILL) loses at most the group being written; SQLite's WAL keeps the file sound.

Reads of the call cache are served from memory: the successful calls are loaded once at open and
kept current by every ``put_call``, so a cached ``get_call`` is a dict look-up. Only short answers
are kept whole; a long one is read back from the file when it is hit, so memory stays flat however
many long answers a run stores.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from .rows import COMPRESS_FROM, process_owner, unpack_key


class StoreError(Exception):
    """The store file cannot be used (not a database, closed store, failed write)."""


class StoreVersionError(StoreError):
    """The file was written by a newer schema version than this code knows."""

    def __init__(self, path: str | os.PathLike[str], found: int, supported: int) -> None:
        self.path = str(path)
        self.found = found
        self.supported = supported
        super().__init__(
            f"{path}: store schema version {found} is newer than this code supports "
            f"(version {supported}); upgrade oracleladder to open this store"
        )


# bytes of the file each reading connection maps: a long answer read back (a hit, a read-only
# store's rollouts) then costs no read() per 512-byte page (a 6 KB answer is ~12 pages)
MMAP_SIZE = 1 << 30

# A cached result as kept in memory: (text, tokens_in, tokens_out, latency_s, finish_reason), the
# text None when it is long (read on a hit). A plain tuple: CPython reads an exact tuple fastest.
Hit = tuple["str | None", int, int, float, "str | None"]


def kept(text: str) -> str | None:
    """A response as the in-memory cache keeps it: whole when short, else None (read on a hit)."""
    return text if len(text) < COMPRESS_FROM and len(text.encode()) < COMPRESS_FROM else None


class Op:
    """A queued write: statements run in order, each with its parameters (a flush has none).
    Consecutive ops of the same statements are run together, statement by statement."""

    __slots__ = ("statements", "params", "future")

    def __init__(self, statements: tuple[str, ...], params: tuple[Sequence[Any], ...],
                 future: asyncio.Future[None] | None) -> None:
        self.statements = statements
        self.params = params
        self.future = future


_STOP = object()


class Core:
    """The connections, the writer and the hit cache; the table modules add the queries."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, *, uri: str, readonly: bool,
                 commit_interval: float, max_batch: int) -> None:
        self.path = path
        self.readonly = readonly
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        # misses of the call cache: a primary-key read in the caller's thread costs microseconds
        # under WAL, far less than a hop to aiosqlite's thread for each of thousands of new calls
        self._reader = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._reader.row_factory = sqlite3.Row
        self._reader.execute("PRAGMA query_only = 1")
        self._reader.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
        self._commit_interval = commit_interval
        self._max_batch = max_batch
        self._hits: dict[str, Hit] = {}
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._failure: BaseException | None = None
        self.commits = 0  # transactions committed by the writer (for tests and diagnostics)
        # the calls this store is asking, claimed in the file (claims.py), as its process and its own id
        self._claimer = f"{process_owner(os.getpid())}/{uuid.uuid4().hex[:8]}"
        self._claimed: set[str] = set()
        self._renewal: asyncio.Task[None] | None = None

    async def flush(self) -> None:
        """Return once every write queued so far is committed."""
        self._check_open()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(Op((), (), fut))
        await fut

    async def close(self) -> None:
        """Flush, stop the writer and close the file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer is not None and not self._writer.done():
                self._queue.put_nowait(_STOP)
                await self._writer
        finally:
            self._reader.close()
            await self._conn.close()
        if self._failure is not None:
            raise StoreError(f"{self.path}: the store's writer failed") from self._failure

    # ---------------------------------------------------------------- the hit cache

    async def _load_hits(self) -> None:
        # long responses are not read: only that they are there
        rows = await self._fetch(
            "SELECT key, CASE typeof(response) WHEN 'text' THEN "  # typeof first: a BLOB is not read
            f"CASE WHEN length(CAST(response AS BLOB)) < {COMPRESS_FROM} THEN response END END AS text, "
            "tokens_in, tokens_out, latency_s, finish_reason FROM calls WHERE response IS NOT NULL")
        self._hits = {unpack_key(r["key"]): (r["text"], r["tokens_in"], r["tokens_out"], r["latency_s"],
                                             r["finish_reason"]) for r in rows}

    # ---------------------------------------------------------------- reads

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        self._check_open()
        async with self._conn.execute(sql, params) as cur:
            return list(await cur.fetchall())

    # ---------------------------------------------------------------- the writer

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        if self._failure is not None:
            raise StoreError(f"{self.path}: the store's writer failed") from self._failure

    async def _submit(self, sql: str, params: Sequence[Any], wait: bool = True) -> None:
        await self._submit_all((sql,), (params,), wait)

    async def _submit_all(self, statements: tuple[str, ...], params: tuple[Sequence[Any], ...],
                          wait: bool = True) -> None:
        """Queue statements that commit together (in one transaction), in order."""
        self._check_open()
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        if not wait:
            self._queue.put_nowait(Op(statements, params, None))
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(Op(statements, params, fut))
        await fut

    async def _write_loop(self) -> None:
        stop = False
        batch: list[Op] = []
        try:
            while not stop:
                first = await self._queue.get()
                if first is _STOP:
                    break
                batch = [first]
                if self._commit_interval > 0:
                    await asyncio.sleep(self._commit_interval)
                while len(batch) < self._max_batch:
                    try:
                        item = self._queue.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                    if item is _STOP:
                        stop = True
                        break
                    batch.append(item)
                await self._write_batch(batch)
        except BaseException as exc:  # the connection itself failed: fail every waiter, this batch's too
            self._failure = exc
            while True:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if item is not _STOP:
                    batch.append(item)
            _resolve(batch, StoreError(f"{self.path}: the store's writer failed: {exc!r}"))
            if not isinstance(exc, Exception):
                raise

    async def _write_batch(self, batch: list[Op]) -> None:
        # a write that fails (any exception: sqlite3's, or binding a value SQLite cannot hold, an int
        # past 64 bits) fails its own caller; the others commit
        ops = [op for op in batch if op.statements]
        if ops:
            try:
                await self._transaction(ops)
            except Exception as exc:  # noqa: BLE001
                if len(ops) == 1:
                    _resolve([ops[0]], exc)
                else:  # find the bad write(s): commit the rest one by one
                    for op in ops:
                        try:
                            await self._transaction([op])
                        except Exception as exc1:  # noqa: BLE001
                            _resolve([op], exc1)
                        else:
                            _resolve([op], None)
                _resolve([op for op in batch if not op.statements], None)
                return
        _resolve(batch, None)

    async def _transaction(self, ops: list[Op]) -> None:
        conn = self._conn
        async with immediate(conn):
            i = 0
            while i < len(ops):  # consecutive writes of the same statements go in one executemany each
                j = i + 1
                while j < len(ops) and ops[j].statements == ops[i].statements:
                    j += 1
                for n, sql in enumerate(ops[i].statements):
                    if j - i == 1:
                        await conn.execute(sql, ops[i].params[n])
                    else:
                        await conn.executemany(sql, [op.params[n] for op in ops[i:j]])
                i = j
        self.commits += 1


@asynccontextmanager
async def immediate(conn: aiosqlite.Connection) -> AsyncIterator[None]:
    """One write transaction: BEGIN IMMEDIATE (the write lock, taken at once), COMMIT when the block ends,
    ROLLBACK when it (or the commit) raises."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        await conn.execute("COMMIT")
    except BaseException:
        try:
            await conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


def _resolve(ops: Iterable[Op], exc: BaseException | None) -> None:
    for op in ops:
        f = op.future
        if f is None or f.done():
            continue
        if exc is None:
            f.set_result(None)
        else:
            f.set_exception(exc if isinstance(exc, StoreError) else StoreError(f"store write failed: {exc}"))
