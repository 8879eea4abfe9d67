"""The experiment store: one SQLite file (WAL) per experiment, written through aiosqlite.

``Store`` is the core (`core.py`: connections, group-commit writer, hit cache) with one query
module per table (calls and requests, the claims on calls in flight, problems, families, compile
attempts, packets, reports, runs, rollouts, failed jobs, screen verdicts, meta, imported panels, PRIM's
primitives); this module opens a store and migrates it (`schema.py`).

Each response is stored once, in its call; a rollout keeps its own copy only where it differs from
its call's. Each prompt's request is stored once for its K calls, and the strings every rollout
repeats once in ``names``. Requests, responses and families of ``COMPRESS_FROM`` bytes or more are
stored as zstd-compressed BLOBs; every reader takes both forms (stores written before keep their
plain text). Call keys are stored as their 32 bytes.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from .attempts import AttemptsTable, CompileAttempt, IntegrateAttempt, PrimitiveAttempt
from .batches import BatchTable
from .calls import CallRecord
from .claims import ClaimsTable
from .core import MMAP_SIZE, StoreError, StoreVersionError, immediate
from .failed_jobs import FailedJob, FailedJobsTable
from .families import FamiliesTable
from .meta import MetaTable
from .packets import PacketsTable, StoredPacket
from .panels import PanelsTable
from .primitives import PrimitivesTable
from .problems import ProblemsTable
from .reports import ReportsTable
from .reviews import ReviewsTable
from .rollouts import RolloutsTable
from .rows import COMPRESS_FROM
from .runs import RunRecord, RunsTable, mark_interrupted
from .schema import MIGRATIONS, SCHEMA_VERSION, SQL_FUNCTIONS
from .screen import ScreenTable, ScreenVerdict

DEFAULT_STORE = Path("ladder.sqlite")
# bytes, SQLite's smallest; its default 4096 left about 900 bytes unused beside each answer of ~3 KB
# compressed, 1024 about 170, 512 about 80 (docs/benchmarks.md, "The store at scale")
PAGE_SIZE = 512

_SQLITE_READONLY = 8  # sqlite3.SQLITE_READONLY, which Python 3.10 does not define


class _Opening:
    """What ``Store.open`` returns: await it, or use it as an async context manager."""

    def __init__(self, path: str | os.PathLike[str], kwargs: dict[str, Any]) -> None:
        self._path = path
        self._kwargs = kwargs
        self._store: Store | None = None

    def __await__(self):  # noqa: ANN204 - the coroutine's own awaitable
        return Store._open(self._path, **self._kwargs).__await__()

    async def __aenter__(self) -> Store:
        self._store = await Store._open(self._path, **self._kwargs)
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()


class Store(ClaimsTable, ProblemsTable, FamiliesTable, AttemptsTable, PacketsTable, ReportsTable, RunsTable,
            RolloutsTable, FailedJobsTable, ScreenTable, BatchTable, MetaTable, PanelsTable, PrimitivesTable,
            ReviewsTable):
    """One experiment's SQLite file. Open with ``await Store.open(path)``."""

    # ---------------------------------------------------------------- opening and closing

    @classmethod
    def open(cls, path: str | os.PathLike[str] = DEFAULT_STORE, *, commit_interval: float = 0.002,
             max_batch: int = 4096, synchronous: Literal["OFF", "NORMAL", "FULL"] = "NORMAL",
             busy_timeout_ms: int = 10_000, readonly: bool = False) -> _Opening:
        """Open (creating and migrating as needed) the store at ``path``.

        ``readonly``: open an existing store for reading only, which works where the file or its
        folder cannot be written (mode 0444, a read-only folder or mount); every write raises
        StoreError. Runs whose process is gone are marked interrupted on every writable open.

        ``commit_interval``: seconds the writer waits after the first queued write to gather more
        into the same transaction. ``synchronous``: SQLite's fsync level; NORMAL (the default)
        survives any process crash, FULL also survives power loss.
        """
        return _Opening(path, dict(commit_interval=commit_interval, max_batch=max_batch,
                                   synchronous=synchronous, busy_timeout_ms=busy_timeout_ms,
                                   readonly=readonly))

    @classmethod
    async def _open(cls, path: str | os.PathLike[str], *, commit_interval: float, max_batch: int,
                    synchronous: str, busy_timeout_ms: int, readonly: bool) -> Store:
        p = Path(path)
        if p.is_dir():
            raise StoreError(f"{p}: is a folder; --store takes the path of a store file")
        if readonly:
            return await cls._open_readonly(p, commit_interval=commit_interval, max_batch=max_batch)
        if p.exists() and not os.access(p, os.W_OK):  # SQLite would open it, and fail at its first write
            raise _read_only(p)
        if not p.exists():
            _check_creatable(p)
        conn = await _connect(p, str(p), uri=False)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            try:
                version = await _user_version(conn)
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorcode", 0) & 0xFF == _SQLITE_READONLY:  # its folder is read-only
                    raise _read_only(p) from exc
                raise StoreError(f"{p}: not an OracleLadder store ({exc})") from exc
            if version > SCHEMA_VERSION:
                raise StoreVersionError(p, version, SCHEMA_VERSION)
            # a new file only (an existing one keeps its page size): long answers are mostly larger
            # than a page and overflow into full pages, so a leaf wastes at most a small page's slack
            await conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            try:
                mode = await _scalar(conn, "PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"{p}: cannot be written ({exc}); commands that only read it "
                                 "(export, report, compare, runs) open a read-only store") from exc
            if str(mode).lower() != "wal":
                raise StoreError(f"{p}: could not switch the journal to WAL (got {mode!r})")
            await conn.execute(f"PRAGMA synchronous = {synchronous}")
            # the writer does not map the file (MMAP_SIZE): it keeps reading the file's growing tail
            # (the b-trees' last leaves, just checkpointed), and mapped pages stay resident, so RSS
            # grew with the store (+25 MB by 40% of a paper-size probe)
            await conn.execute("PRAGMA foreign_keys = ON")
            for name, (n_args, fn) in SQL_FUNCTIONS.items():
                await conn.create_function(name, n_args, fn, deterministic=True)
            await _migrate(conn, p)
            await mark_interrupted(conn)
            store = cls(p, conn, uri=p.absolute().as_uri(), readonly=False,
                        commit_interval=commit_interval, max_batch=max_batch)
            await store._load_hits()
        except BaseException:
            await conn.close()
            raise
        store._writer = asyncio.get_running_loop().create_task(store._write_loop())
        return store

    @classmethod
    async def _open_readonly(cls, p: Path, *, commit_interval: float, max_batch: int) -> Store:
        if not p.is_file():
            raise StoreError(f"{p}: no such store")
        uri = f"{p.absolute().as_uri()}?mode=ro"
        conn = await _connect(p, uri, uri=True)
        try:
            try:
                version = await _user_version(conn)
            except sqlite3.OperationalError:
                # WAL needs its -shm file beside the store; in a read-only folder it cannot be made.
                # Reading the file as immutable is right only when no -wal holds unmerged commits.
                await conn.close()
                wal = p.with_name(p.name + "-wal")
                if wal.exists() and wal.stat().st_size > 0:
                    raise StoreError(f"{p}: read-only, and its write-ahead log {wal.name} holds commits "
                                     "not yet merged; copy the store with its -wal file to a writable "
                                     "folder to read it") from None
                uri += "&immutable=1"
                conn = await _connect(p, uri, uri=True)
                version = await _user_version(conn)
            if version > SCHEMA_VERSION:
                raise StoreVersionError(p, version, SCHEMA_VERSION)
            await conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
            if version < SCHEMA_VERSION:
                raise StoreError(f"{p}: store schema version {version} needs migrating to version "
                                 f"{SCHEMA_VERSION}, which a read-only store cannot take; open it once "
                                 "where it can be written")
            store = cls(p, conn, uri=uri, readonly=True, commit_interval=commit_interval,
                        max_batch=max_batch)
            await store._load_hits()
        except sqlite3.DatabaseError as exc:
            await conn.close()
            raise StoreError(f"{p}: not an OracleLadder store ({exc})") from exc
        except BaseException:
            await conn.close()
            raise
        return store

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION


def _read_only(p: Path) -> StoreError:
    return StoreError(f"cannot write the store at {p}: read-only")


def _check_creatable(p: Path) -> None:
    """Make the folder of a new store, and see that a file can be made in it, before SQLite tries (its
    "unable to open database file" names no cause, and its connection's thread fails after it)."""
    folder = p.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise StoreError(f"{folder}: the folder is read-only: a new store cannot be made there "
                             "(--store PATH names another place)") from None
        raise StoreError(f"{p}: cannot make the store ({exc.strerror})") from None
    p.unlink()  # SQLite makes the store itself


async def _scalar(conn: aiosqlite.Connection, sql: str) -> Any:
    async with conn.execute(sql) as cur:
        row = await cur.fetchone()
    return None if row is None else row[0]


async def _connect(p: Path, database: str, *, uri: bool) -> aiosqlite.Connection:
    try:
        return await aiosqlite.connect(database, uri=uri, isolation_level=None)
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{p}: cannot open the store ({exc})") from exc


async def _user_version(conn: aiosqlite.Connection) -> int:
    return int(await _scalar(conn, "PRAGMA user_version"))


async def _migrate(conn: aiosqlite.Connection, path: Path) -> None:
    """Apply the missing migration steps, each in its own transaction with its version bump."""
    while True:
        async with immediate(conn):  # re-read under the write lock: another process may migrate too
            version = await _user_version(conn)
            if version > SCHEMA_VERSION:
                raise StoreVersionError(path, version, SCHEMA_VERSION)
            if version == SCHEMA_VERSION:
                return
            for stmt in MIGRATIONS[version]:
                await conn.execute(stmt)
            await conn.execute(f"PRAGMA user_version = {version + 1}")


__all__ = ["COMPRESS_FROM", "DEFAULT_STORE", "CallRecord", "CompileAttempt", "FailedJob", "RunRecord",
           "IntegrateAttempt", "PrimitiveAttempt", "ScreenVerdict", "Store", "StoredPacket", "StoreError", "StoreVersionError"]
