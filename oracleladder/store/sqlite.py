"""The experiment store: one SQLite file (WAL) per experiment, written through aiosqlite.

Reads of the call cache are served from memory: the successful calls of the ``calls`` table are
loaded once at open and kept current by every ``put_call``, so a cached ``get_call`` is a dict
look-up. Only short answers are kept whole in memory; a long one is read back from the file when
it is hit, so memory stays flat however many long answers a run stores. A miss falls back to one
indexed SELECT, so a call another process stored is found; it runs on a plain read-only connection
in the caller's thread (a primary-key read costs microseconds under WAL, far less than a hop to
aiosqlite's thread for each of thousands of new calls).

Each response is stored once, in its call; a rollout keeps its own copy only where it differs from
its call's. Requests and responses of ``COMPRESS_FROM`` bytes or more are stored as zstd-compressed
BLOBs; every reader takes both forms (stores written before keep their plain text).

Writes go through one writer task that commits everything queued in one transaction (group
commit): 64 concurrent puts cost a handful of transactions, not 64. Each put returns once its
transaction is committed (``wait=False`` returns at once; ``flush()`` waits for everything queued).
A crash (even SIGKILL) loses at most the group being written; SQLite's WAL keeps the file sound.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import aiosqlite
import zstandard
from pydantic import BaseModel

from ..clients.base import ChatRequest, ChatResult
from ..schemas.models import (
    CodeProblem,
    Family,
    FamilyReport,
    MathProblem,
    Rollout,
    Verdict,
    to_released,
)
from ..schemas.types import GradeStatus, Label
from .batches import BatchTable
from .schema import MIGRATIONS, SCHEMA_VERSION

DEFAULT_STORE = Path("ladder.sqlite")


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


class CompileAttempt(BaseModel):
    """One teacher attempt at compiling a family, with the validator errors it got."""

    pid: str
    source: str
    granularity: str | None = None
    attempt: int
    plan: Any = None
    errors: list[Any]
    passed: bool
    created_at: str


class PrimitiveAttempt(BaseModel):
    """One teacher attempt at a family's primitive (`ladder compile --primitives-only`)."""

    pid: str
    source: str  # the roadmap set of the family
    granularity: str | None = None
    teacher: str
    attempt: int
    primitive: str | None = None  # None when the teacher gave no usable answer
    errors: list[Any]
    passed: bool
    created_at: str


class RunRecord(BaseModel):
    """One run (a compile, a probe, an import ...) and its totals."""

    id: str
    kind: str
    config: Any
    started_at: str
    finished_at: str | None = None
    status: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    usage: dict[str, Any] | None = None


class FailedJob(BaseModel):
    """A probe job whose call failed for good: no answer, so no verdict; a rerun asks again."""

    run_id: str
    student: str
    source: str
    pid: str
    target: str
    k: int
    call_key: str
    reason: str


class ScreenVerdict(BaseModel):
    """An anchor screen's verdict on one family of a diagnostic set (`ladder screen`)."""

    set_name: str
    pid: str
    source: str  # the roadmap set screened (the teacher's model string, or TEACHER@granularity)
    anchor: str
    rule: str  # default or direct-only
    k: int
    max_tokens: int
    verdict: str  # kept, solved_directly, milestone_unsolved, structural or incomplete
    reason: str
    direct: int  # correct C1 attempts of K
    stage0: dict[str, float]  # the anchor's solve rate per tested milestone ("m<index>")
    run_id: str


class CallRecord(BaseModel):
    """A row of the calls table, successful or not."""

    key: str
    provider: str
    model: str
    request: dict[str, Any]
    result: ChatResult | None
    error: str | None
    run_id: str | None
    created_at: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _json(obj: Any) -> str:
    if isinstance(obj, BaseModel):
        return obj.model_dump_json()
    return json.dumps(obj, ensure_ascii=False, default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if hasattr(obj, "as_dict"):
        return obj.as_dict()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


COMPRESS_FROM = 512  # bytes; shorter texts gain little from compression and stay plain text


def _pack(text: str) -> str | bytes:
    """A text as stored: itself, or when long its zstd-compressed UTF-8 (a BLOB)."""
    data = text.encode()
    return text if len(data) < COMPRESS_FROM else zstandard.compress(data, 3)


def _kept(text: str) -> str | None:
    """A response as the in-memory cache keeps it: whole when short, else None (read on a hit)."""
    return text if len(text) < COMPRESS_FROM and len(text.encode()) < COMPRESS_FROM else None


def _unpack(value: str | bytes) -> str:
    return zstandard.decompress(value).decode() if isinstance(value, bytes) else value


def _gran(granularity: str | None) -> str:
    return granularity or ""


_GRAN_ORDER = "CASE granularity WHEN '' THEN 0 WHEN 'default' THEN 1 ELSE 2 END, granularity"

_PUT_CALL = """
INSERT INTO calls (key, provider, model, request, response, tokens_in, tokens_out, latency_s,
                   finish_reason, error, run_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET
    provider = excluded.provider, model = excluded.model, request = excluded.request,
    response = excluded.response, tokens_in = excluded.tokens_in,
    tokens_out = excluded.tokens_out, latency_s = excluded.latency_s,
    finish_reason = excluded.finish_reason, error = excluded.error, run_id = excluded.run_id,
    created_at = excluded.created_at
WHERE excluded.response IS NOT NULL OR calls.response IS NULL
"""
_PUT_PROBLEM = """
INSERT INTO problems (pid, kind, data, created_at) VALUES (?, ?, ?, ?)
ON CONFLICT(pid) DO UPDATE SET kind = excluded.kind, data = excluded.data
"""
_PUT_FAMILY = """
INSERT INTO families (pid, source, granularity, family, released, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(pid, source, granularity) DO UPDATE SET
    family = excluded.family, released = excluded.released, updated_at = excluded.updated_at
"""
_PUT_ATTEMPT = """
INSERT OR REPLACE INTO compile_attempts
    (pid, source, granularity, attempt, plan, errors, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
_PUT_PRIMITIVE_ATTEMPT = """
INSERT OR REPLACE INTO primitive_attempts
    (pid, source, granularity, teacher, attempt, primitive, errors, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_PUT_REPORT = """
INSERT OR REPLACE INTO reports (pid, source, granularity, report, passed, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""
# the response is left NULL when it is the one its call stored (the readers take the call's)
_PUT_ROLLOUT = """
INSERT OR REPLACE INTO rollouts
    (student, source, pid, target, k, call_key, run_id, response, label, reason, extracted, status,
     created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
        CASE WHEN EXISTS (SELECT 1 FROM calls WHERE key = ?6 AND response = ?8) THEN NULL ELSE ?8 END,
        ?9, ?10, ?11, ?12, ?13)
"""
_PUT_FAILED_JOB = """
INSERT OR REPLACE INTO failed_jobs (student, source, pid, target, k, call_key, run_id, reason, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_START_RUN = """
INSERT INTO runs (id, kind, config, started_at, status, owner) VALUES (?, ?, ?, ?, ?, ?)
"""
_FINISH_RUN = """
UPDATE runs SET finished_at = ?, status = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?,
                usage = ?
WHERE id = ?
"""

_STOP = object()

# A cached result as kept in memory: (text, tokens_in, tokens_out, latency_s, finish_reason); the
# text is None when it is long (read from the file on a hit).
_Hit = tuple["str | None", int, int, float, "str | None"]


class _Op:
    __slots__ = ("sql", "params", "future")

    def __init__(self, sql: str | None, params: Sequence[Any], future: asyncio.Future[None] | None):
        self.sql = sql
        self.params = params
        self.future = future


class _Opening:
    """What ``Store.open`` returns: await it, or use it as an async context manager."""

    def __init__(self, path: str | os.PathLike[str], kwargs: dict[str, Any]) -> None:
        self._path = path
        self._kwargs = kwargs
        self._store: Store | None = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return Store._open(self._path, **self._kwargs).__await__()

    async def __aenter__(self) -> Store:
        self._store = await Store._open(self._path, **self._kwargs)
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()


class Store(BatchTable):
    """One experiment's SQLite file. Open with ``await Store.open(path)``."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, *, uri: str, readonly: bool,
                 commit_interval: float, max_batch: int) -> None:
        self.path = path
        self.readonly = readonly
        self._conn = conn
        self._reader = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._reader.execute("PRAGMA query_only = 1")
        self._commit_interval = commit_interval
        self._max_batch = max_batch
        self._hits: dict[str, _Hit] = {}
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._failure: BaseException | None = None
        self.commits = 0  # transactions committed by the writer (for tests and diagnostics)

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
        if p.parent != Path("") and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        conn = await _connect(p, str(p), uri=False)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            try:
                version = await _user_version(conn)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{p}: not an OracleLadder store ({exc})") from exc
            if version > SCHEMA_VERSION:
                raise StoreVersionError(p, version, SCHEMA_VERSION)
            try:
                mode = await _scalar(conn, "PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"{p}: cannot be written ({exc}); commands that only read it "
                                 "(export, report, compare, runs) open a read-only store") from exc
            if str(mode).lower() != "wal":
                raise StoreError(f"{p}: could not switch the journal to WAL (got {mode!r})")
            await conn.execute(f"PRAGMA synchronous = {synchronous}")
            await conn.execute("PRAGMA foreign_keys = ON")
            await _migrate(conn, p)
            await _mark_interrupted(conn)
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

    async def flush(self) -> None:
        """Return once every write queued so far is committed."""
        self._check_open()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Op(None, (), fut))
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

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION

    # ---------------------------------------------------------------- the writer

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        if self._failure is not None:
            raise StoreError(f"{self.path}: the store's writer failed") from self._failure

    async def _submit(self, sql: str, params: Sequence[Any], wait: bool = True) -> None:
        self._check_open()
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        if not wait:
            self._queue.put_nowait(_Op(sql, params, None))
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Op(sql, params, fut))
        await fut

    async def _write_loop(self) -> None:
        stop = False
        try:
            while not stop:
                first = await self._queue.get()
                if first is _STOP:
                    break
                if self._commit_interval > 0:
                    await asyncio.sleep(self._commit_interval)
                batch: list[_Op] = [first]
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
        except BaseException as exc:  # the connection itself failed: fail every waiter
            self._failure = exc
            while True:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if item is not _STOP and item.future is not None and not item.future.done():
                    item.future.set_exception(StoreError(f"{self.path}: store writer failed"))
            if not isinstance(exc, Exception):
                raise

    async def _write_batch(self, batch: list[_Op]) -> None:
        ops = [op for op in batch if op.sql is not None]
        if ops:
            try:
                await self._transaction(ops)
            except sqlite3.Error as exc:
                if len(ops) == 1:
                    _resolve([ops[0]], exc)
                else:  # find the bad write(s): commit the rest one by one
                    for op in ops:
                        try:
                            await self._transaction([op])
                        except sqlite3.Error as exc1:
                            _resolve([op], exc1)
                        else:
                            _resolve([op], None)
                _resolve([op for op in batch if op.sql is None], None)
                return
        _resolve(batch, None)

    async def _transaction(self, ops: list[_Op]) -> None:
        conn = self._conn
        await conn.execute("BEGIN IMMEDIATE")
        try:
            i = 0
            while i < len(ops):  # consecutive writes of one statement go in one executemany
                j = i + 1
                while j < len(ops) and ops[j].sql == ops[i].sql:
                    j += 1
                if j - i == 1:
                    await conn.execute(ops[i].sql, ops[i].params)  # type: ignore[arg-type]
                else:
                    await conn.executemany(ops[i].sql, [op.params for op in ops[i:j]])  # type: ignore[arg-type]
                i = j
            await conn.execute("COMMIT")
        except BaseException:
            try:
                await conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.commits += 1

    # ---------------------------------------------------------------- calls

    async def _load_hits(self) -> None:
        # long responses are not read: only that they are there
        async with self._conn.execute(
            f"SELECT key, CASE WHEN length(CAST(response AS BLOB)) < {COMPRESS_FROM} AND typeof(response) = 'text' "
            "THEN response END, tokens_in, tokens_out, latency_s, finish_reason FROM calls "
            "WHERE response IS NOT NULL"
        ) as cur:
            rows = await cur.fetchall()
        self._hits = {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}

    async def get_call(self, key: str) -> ChatResult | None:
        """The stored result of a successful call, or None (failed calls are never served)."""
        hit = self._hits.get(key)
        text = None if hit is None else hit[0]
        if text is None:
            self._check_open()
            row = self._reader.execute(
                "SELECT response, tokens_in, tokens_out, latency_s, finish_reason FROM calls "
                "WHERE key = ? AND response IS NOT NULL", (key,)
            ).fetchone()
            if row is None:
                return None
            text = _unpack(row[0])
            hit = self._hits[key] = (_kept(text), row[1], row[2], row[3], row[4])
        return ChatResult(text=text, tokens_in=hit[1], tokens_out=hit[2], latency_s=hit[3],
                          finish_reason=hit[4])

    def cached(self, key: str) -> bool:
        """Whether a successful result for ``key`` is known (memory only, no I/O)."""
        return key in self._hits

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None,
                       wait: bool = True) -> None:
        """Store one call: a result, or (``result=None``) its error. A failure never overwrites a
        stored success. Returns once committed (``wait=False``: at once)."""
        if result is None and error is None:
            error = "no result"
        key = request.key()
        request_json = _pack(request.model_dump_json())
        if result is not None:
            self._hits[key] = (_kept(result.text), result.tokens_in, result.tokens_out, result.latency_s,
                               result.finish_reason)
            params = (key, request.provider, request.model, request_json, _pack(result.text),
                      result.tokens_in, result.tokens_out, result.latency_s, result.finish_reason,
                      error, run_id, _now())
        else:
            params = (key, request.provider, request.model, request_json, None, 0, 0, 0.0, None,
                      error, run_id, _now())
        await self._submit(_PUT_CALL, params, wait)

    async def get_call_record(self, key: str) -> CallRecord | None:
        """The full row of a call, failed or not."""
        rows = await self._fetch(
            "SELECT key, provider, model, request, response, tokens_in, tokens_out, latency_s, "
            "finish_reason, error, run_id, created_at FROM calls WHERE key = ?", (key,))
        return _call_record(rows[0]) if rows else None

    async def calls(self, *, run_id: str | None = None, errors_only: bool = False) -> list[CallRecord]:
        sql = ("SELECT key, provider, model, request, response, tokens_in, tokens_out, latency_s, "
               "finish_reason, error, run_id, created_at FROM calls WHERE 1=1")
        params: list[Any] = []
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        if errors_only:
            sql += " AND response IS NULL"
        return [_call_record(r) for r in await self._fetch(sql + " ORDER BY rowid", params)]

    async def call_count(self, *, successful_only: bool = False) -> int:
        """Calls stored (committed), all of them or only the successful ones."""
        sql = "SELECT COUNT(*) FROM calls"
        if successful_only:
            sql += " WHERE response IS NOT NULL"
        return int((await self._fetch(sql))[0][0])

    # ---------------------------------------------------------------- problems

    async def put_problem(self, problem: MathProblem | CodeProblem, *, wait: bool = True) -> None:
        kind = "code" if isinstance(problem, CodeProblem) else "math"
        await self._submit(_PUT_PROBLEM, (problem.pid, kind, problem.model_dump_json(), _now()), wait)

    async def put_problems(self, problems: Iterable[MathProblem | CodeProblem]) -> int:
        """Queue many problems and wait once; returns how many."""
        n = 0
        for p in problems:
            await self.put_problem(p, wait=False)
            n += 1
        await self.flush()
        return n

    async def get_problem(self, pid: str) -> MathProblem | CodeProblem | None:
        rows = await self._fetch("SELECT kind, data FROM problems WHERE pid = ?", (pid,))
        return _problem(rows[0][0], rows[0][1]) if rows else None

    async def problems(self, kind: Literal["math", "code"] | None = None) -> list[MathProblem | CodeProblem]:
        if kind is None:
            rows = await self._fetch("SELECT kind, data FROM problems ORDER BY rowid")
        else:
            rows = await self._fetch("SELECT kind, data FROM problems WHERE kind = ? ORDER BY rowid",
                                     (kind,))
        return [_problem(k, d) for k, d in rows]

    # ---------------------------------------------------------------- families

    async def put_family(self, family: Family, *, wait: bool = True) -> None:
        """Store a family under (pid, provenance.source, provenance.granularity), replacing any
        earlier one there; keeps the full Family JSON and its released record."""
        now = _now()
        params = (family.pid, family.provenance.source, _gran(family.provenance.granularity),
                  family.model_dump_json(), _json(to_released(family)), now, now)
        await self._submit(_PUT_FAMILY, params, wait)

    async def get_family(self, pid: str, source: str = "release",
                         granularity: str | None = None) -> Family | None:
        """The family of ``pid`` from ``source``. ``granularity=None`` takes any granularity,
        preferring an unspecified one, then "default"."""
        if granularity is None:
            rows = await self._fetch(
                f"SELECT family FROM families WHERE pid = ? AND source = ? ORDER BY {_GRAN_ORDER} "
                "LIMIT 1", (pid, source))
        else:
            rows = await self._fetch(
                "SELECT family FROM families WHERE pid = ? AND source = ? AND granularity = ?",
                (pid, source, granularity))
        return Family.model_validate_json(rows[0][0]) if rows else None

    async def families(self, source: str | None = None,
                       granularity: str | None = None) -> list[Family]:
        """Stored families in insertion order, optionally of one source and/or granularity."""
        rows = await self._fetch(*_family_query("family", source, granularity))
        return [Family.model_validate_json(r[0]) for r in rows]

    async def released_records(self, source: str | None = None,
                               granularity: str | None = None) -> list[dict[str, Any]]:
        """The released-format records of stored families, in insertion order."""
        rows = await self._fetch(*_family_query("released", source, granularity))
        return [json.loads(r[0]) for r in rows]

    async def sources(self) -> list[str]:
        return [r[0] for r in await self._fetch("SELECT DISTINCT source FROM families ORDER BY source")]

    # ---------------------------------------------------------------- compile attempts

    async def put_compile_attempt(self, pid: str, source: str, attempt: int, *, plan: Any,
                                  errors: Sequence[Any], passed: bool,
                                  granularity: str | None = None, wait: bool = True) -> None:
        """One teacher attempt (index ``attempt``) for (pid, source, granularity): the plan the
        teacher returned (a model, dict or None) and the validator errors it got."""
        params = (pid, source, _gran(granularity), int(attempt),
                  None if plan is None else _json(plan), _json(list(errors)), int(bool(passed)),
                  _now())
        await self._submit(_PUT_ATTEMPT, params, wait)

    async def compile_attempts(self, pid: str, source: str,
                               granularity: str | None = None) -> list[CompileAttempt]:
        """Attempts in order; ``granularity=None`` returns those of every granularity."""
        sql = ("SELECT pid, source, granularity, attempt, plan, errors, passed, created_at "
               "FROM compile_attempts WHERE pid = ? AND source = ?")
        params: list[Any] = [pid, source]
        if granularity is not None:
            sql += " AND granularity = ?"
            params.append(_gran(granularity))
        rows = await self._fetch(sql + " ORDER BY granularity, attempt", params)
        return [
            CompileAttempt(pid=r[0], source=r[1], granularity=r[2] or None, attempt=r[3],
                           plan=None if r[4] is None else json.loads(r[4]),
                           errors=json.loads(r[5]), passed=bool(r[6]), created_at=r[7])
            for r in rows
        ]

    async def put_primitive_attempt(self, family: Family, teacher: str, attempt: int, *, primitive: str | None,
                                    errors: Sequence[Any], passed: bool, wait: bool = True) -> None:
        """One teacher attempt at ``family``'s primitive, with the validator errors it got."""
        params = (family.pid, family.provenance.source, _gran(family.provenance.granularity), teacher,
                  int(attempt), primitive, _json(list(errors)), int(bool(passed)), _now())
        await self._submit(_PUT_PRIMITIVE_ATTEMPT, params, wait)

    async def primitive_attempts(self, pid: str | None = None) -> list[PrimitiveAttempt]:
        """Primitive attempts (of one pid, or all) in order."""
        sql = ("SELECT pid, source, granularity, teacher, attempt, primitive, errors, passed, created_at "
               "FROM primitive_attempts" + (" WHERE pid = ?" if pid is not None else ""))
        rows = await self._fetch(sql + " ORDER BY rowid", [] if pid is None else [pid])
        return [PrimitiveAttempt(pid=r[0], source=r[1], granularity=r[2] or None, teacher=r[3], attempt=r[4],
                                 primitive=r[5], errors=json.loads(r[6]), passed=bool(r[7]), created_at=r[8])
                for r in rows]

    # ---------------------------------------------------------------- validation reports

    async def put_report(self, report: FamilyReport, source: str, *,
                         granularity: str | None = None, wait: bool = True) -> None:
        params = (report.pid, source, _gran(granularity), report.model_dump_json(),
                  int(report.passed), _now())
        await self._submit(_PUT_REPORT, params, wait)

    async def get_report(self, pid: str, source: str,
                         granularity: str | None = None) -> FamilyReport | None:
        if granularity is None:
            rows = await self._fetch(
                f"SELECT report FROM reports WHERE pid = ? AND source = ? ORDER BY {_GRAN_ORDER} "
                "LIMIT 1", (pid, source))
        else:
            rows = await self._fetch(
                "SELECT report FROM reports WHERE pid = ? AND source = ? AND granularity = ?",
                (pid, source, granularity))
        return FamilyReport.model_validate_json(rows[0][0]) if rows else None

    async def reports(self, source: str | None = None) -> list[FamilyReport]:
        if source is None:
            rows = await self._fetch("SELECT report FROM reports ORDER BY rowid")
        else:
            rows = await self._fetch("SELECT report FROM reports WHERE source = ? ORDER BY rowid",
                                     (source,))
        return [FamilyReport.model_validate_json(r[0]) for r in rows]

    # ---------------------------------------------------------------- runs

    async def start_run(self, kind: str, config: Any = None, *, run_id: str | None = None) -> str:
        """Record a run as started; returns its id (generated unless given)."""
        rid = run_id or f"{kind}-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        await self._submit(_START_RUN, (rid, kind, _json(config), _now(), "running", _owner(os.getpid())))
        return rid

    async def finish_run(self, run_id: str, status: str = "done",
                         usage: dict[str, Any] | Any | None = None) -> None:
        """Mark a run finished with its status and usage (``tokens_in``, ``tokens_out``,
        ``cost_usd`` are lifted into columns; the whole dict is kept as JSON)."""
        if usage is not None and not isinstance(usage, dict):
            usage = usage.as_dict() if hasattr(usage, "as_dict") else json.loads(_json(usage))
        u = usage or {}
        cost = u.get("cost_usd")
        params = (_now(), status, int(u.get("tokens_in") or 0), int(u.get("tokens_out") or 0),
                  None if cost is None else float(cost), None if usage is None else _json(usage),
                  run_id)
        await self._submit(_FINISH_RUN, params)

    async def get_run(self, run_id: str) -> RunRecord | None:
        rows = await self._fetch(_RUN_SELECT + " WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    async def runs(self, kind: str | None = None) -> list[RunRecord]:
        if kind is None:
            rows = await self._fetch(_RUN_SELECT + " ORDER BY rowid")
        else:
            rows = await self._fetch(_RUN_SELECT + " WHERE kind = ? ORDER BY rowid", (kind,))
        return [_run(r) for r in rows]

    # ---------------------------------------------------------------- rollouts

    async def put_rollout(self, rollout: Rollout, *, wait: bool = True) -> None:
        """Store a rollout with its verdict. Keyed by (student, source, pid, target, k, call_key): a
        rerun that reuses a cached call replaces the row (taking the new run_id), not duplicates it."""
        v = rollout.verdict
        params = (rollout.student, rollout.source, rollout.pid, rollout.target, rollout.k, rollout.call_key,
                  rollout.run_id, _pack(rollout.response), Label(v.label).value, v.reason, v.extracted,
                  GradeStatus(v.status).value, _now())
        await self._submit(_PUT_ROLLOUT, params, wait)

    async def rollouts(self, student: str | None = None, run_id: str | None = None, *,
                       pid: str | None = None, target: str | None = None,
                       source: str | None = None) -> list[Rollout]:
        """Stored rollouts, filtered by any of student, run_id, pid, target, source; in insertion order."""
        sql = ("SELECT r.run_id, r.student, r.pid, r.target, r.k, r.call_key, "
               "COALESCE(r.response, (SELECT c.response FROM calls c WHERE c.key = r.call_key)), r.label, "
               "r.reason, r.extracted, r.source, r.status FROM rollouts r WHERE 1=1")
        params: list[Any] = []
        for col, val in (("student", student), ("run_id", run_id), ("pid", pid), ("target", target),
                         ("source", source)):
            if val is not None:
                sql += f" AND r.{col} = ?"
                params.append(val)
        rows = await self._fetch(sql + " ORDER BY r.rowid", params)
        return [
            Rollout(run_id=r[0], student=r[1], pid=r[2], target=r[3], k=r[4], call_key=r[5],
                    response=_unpack(r[6]), verdict=Verdict(label=Label(r[7]), reason=r[8], extracted=r[9],
                                    status=GradeStatus(r[11])),
                    source=r[10])
            for r in rows
        ]

    async def rollout_count(self, student: str | None = None, run_id: str | None = None, *,
                            status: GradeStatus | None = None) -> int:
        sql, params = "SELECT COUNT(*) FROM rollouts WHERE 1=1", []
        if student is not None:
            sql += " AND student = ?"
            params.append(student)
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        if status is not None:
            sql += " AND status = ?"
            params.append(GradeStatus(status).value)
        return int((await self._fetch(sql, params))[0][0])

    async def put_failed_job(self, job: FailedJob, *, wait: bool = True) -> None:
        """Record a job whose call failed for good (replacing an earlier failure of the same job)."""
        params = (job.student, job.source, job.pid, job.target, job.k, job.call_key, job.run_id,
                  job.reason, _now())
        await self._submit(_PUT_FAILED_JOB, params, wait)

    async def failed_jobs(self, student: str | None = None, run_id: str | None = None, *,
                          source: str | None = None) -> list[FailedJob]:
        """Jobs whose last call failed and that have no rollout since (a rerun that answers a job
        supersedes its failure), filtered by any of student, run_id, source; in insertion order."""
        sql = ("SELECT run_id, student, source, pid, target, k, call_key, reason FROM failed_jobs f "
               "WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.student = f.student AND "
               "r.source = f.source AND r.pid = f.pid AND r.target = f.target AND r.k = f.k)")
        params: list[Any] = []
        for col, val in (("student", student), ("run_id", run_id), ("source", source)):
            if val is not None:
                sql += f" AND f.{col} = ?"
                params.append(val)
        rows = await self._fetch(sql + " ORDER BY f.rowid", params)
        return [FailedJob(run_id=r[0], student=r[1], source=r[2], pid=r[3], target=r[4], k=r[5],
                          call_key=r[6], reason=r[7]) for r in rows]

    # ---------------------------------------------------------------- screen verdicts

    async def put_screen_verdict(self, v: ScreenVerdict, *, wait: bool = True) -> None:
        """Store a family's verdict in a set, replacing an earlier screen's."""
        params = (v.set_name, v.pid, v.source, v.anchor, v.rule, v.k, v.max_tokens, v.verdict, v.reason,
                  v.direct, _json(v.stage0), v.run_id, _now())
        await self._submit("INSERT OR REPLACE INTO screen_verdicts (set_name, pid, source, anchor, rule, k, "
                           "max_tokens, verdict, reason, direct, stage0, run_id, created_at) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", params, wait)

    async def screen_verdicts(self, set_name: str) -> list[ScreenVerdict]:
        """A set's verdicts, in the order they were first stored."""
        rows = await self._fetch("SELECT set_name, pid, source, anchor, rule, k, max_tokens, verdict, reason, "
                                 "direct, stage0, run_id FROM screen_verdicts WHERE set_name = ? ORDER BY rowid",
                                 (set_name,))
        keys = ("set_name", "pid", "source", "anchor", "rule", "k", "max_tokens", "verdict", "reason", "direct")
        return [ScreenVerdict(**dict(zip(keys, r[:10])), stage0=json.loads(r[10]), run_id=r[11]) for r in rows]

    async def screen_sets(self) -> list[str]:
        rows = await self._fetch("SELECT DISTINCT set_name FROM screen_verdicts ORDER BY set_name")
        return [r[0] for r in rows]

    # ---------------------------------------------------------------- meta

    async def set_meta(self, key: str, value: Any) -> None:
        await self._submit("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, _json(value)))

    async def get_meta(self, key: str, default: Any = None) -> Any:
        rows = await self._fetch("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    async def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: "ok" when the file is sound."""
        rows = await self._fetch("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)

    # ---------------------------------------------------------------- helpers

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row | tuple[Any, ...]]:
        self._check_open()
        async with self._conn.execute(sql, params) as cur:
            return list(await cur.fetchall())


_RUN_SELECT = ("SELECT id, kind, config, started_at, finished_at, status, tokens_in, tokens_out, "
               "cost_usd, usage FROM runs")


def _run(r: Any) -> RunRecord:
    return RunRecord(id=r[0], kind=r[1], config=json.loads(r[2]), started_at=r[3],
                     finished_at=r[4], status=r[5], tokens_in=r[6], tokens_out=r[7],
                     cost_usd=r[8], usage=None if r[9] is None else json.loads(r[9]))


def _call_record(r: Any) -> CallRecord:
    result = None
    if r[4] is not None:
        result = ChatResult(text=_unpack(r[4]), tokens_in=r[5], tokens_out=r[6], latency_s=r[7],
                            finish_reason=r[8])
    return CallRecord(key=r[0], provider=r[1], model=r[2], request=json.loads(_unpack(r[3])),
                      result=result, error=r[9], run_id=r[10], created_at=r[11])


def _problem(kind: str, data: str) -> MathProblem | CodeProblem:
    return (CodeProblem if kind == "code" else MathProblem).model_validate_json(data)


def _family_query(column: str, source: str | None, granularity: str | None) -> tuple[str, list[Any]]:
    sql = f"SELECT {column} FROM families WHERE 1=1"
    params: list[Any] = []
    if source is not None:
        sql += " AND source = ?"
        params.append(source)
    if granularity is not None:
        sql += " AND granularity = ?"
        params.append(granularity)
    return sql + " ORDER BY rowid", params


def _resolve(ops: Iterable[_Op], exc: BaseException | None) -> None:
    for op in ops:
        f = op.future
        if f is None or f.done():
            continue
        if exc is None:
            f.set_result(None)
        else:
            f.set_exception(StoreError(f"store write failed: {exc}"))


async def _scalar(conn: aiosqlite.Connection, sql: str) -> Any:
    async with conn.execute(sql) as cur:
        row = await cur.fetchone()
    return None if row is None else row[0]


async def _connect(p: Path, database: str, *, uri: bool) -> aiosqlite.Connection:
    try:
        return await aiosqlite.connect(database, uri=uri, isolation_level=None)
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{p}: cannot open the store ({exc})") from exc


def _process_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot; Linux), so that a reused pid is told
    apart from the process that had it; '' where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _owner(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}"


def _gone(owner: str) -> bool:
    """Whether the process of a run's owner no longer runs; only known on its own host."""
    host, pid, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    return start != _process_start(int(pid))


async def _mark_interrupted(conn: aiosqlite.Connection) -> None:
    """Runs still 'running' whose process is gone (killed outright) become 'interrupted'."""
    async with conn.execute("SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL") as cur:
        gone = [(rid,) for rid, owner in await cur.fetchall() if _gone(owner)]
    if gone:
        await conn.executemany("UPDATE runs SET status = 'interrupted' WHERE id = ? AND status = 'running'", gone)


async def _user_version(conn: aiosqlite.Connection) -> int:
    return int(await _scalar(conn, "PRAGMA user_version"))


async def _migrate(conn: aiosqlite.Connection, path: Path) -> None:
    """Apply the missing migration steps, each in its own transaction with its version bump."""
    while True:
        await conn.execute("BEGIN IMMEDIATE")  # re-read under the write lock: another process may migrate too
        try:
            version = await _user_version(conn)
            if version > SCHEMA_VERSION:
                raise StoreVersionError(path, version, SCHEMA_VERSION)
            if version == SCHEMA_VERSION:
                await conn.execute("COMMIT")
                return
            for stmt in MIGRATIONS[version]:
                await conn.execute(stmt)
            await conn.execute(f"PRAGMA user_version = {version + 1}")
            await conn.execute("COMMIT")
        except BaseException:
            try:
                await conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
