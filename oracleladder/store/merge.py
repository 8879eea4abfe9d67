"""Stores made apart (the shards of one run, several machines) combined into one, by content.

Each source is opened (and so migrated) as a store first, so every file is at this schema version;
then it is ATTACHed to the target and copied with INSERT ... SELECT in one transaction: a merge cut
short leaves the target with whole sources only, and merging a source again adds nothing. The ids
local to a file (a request's, a name's) are looked up again by their content (a request's digest, a
name's text). The same call (one key) in two stores is kept once; where two stores hold different
answers under one call key, or different families under one (pid, source, granularity), the row
the target holds first is kept and the difference reported, unless the source is the ``prefer``red
one, whose rows then replace the target's. The claims (leases of the calls in flight) are not merged.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .rows import unpack_key
from .schema import SQL_FUNCTIONS
from .sqlite import Store

# tables whose rows point at ids local to their file, each copied by a statement of its own below;
# every other table is copied row for row
_BY_CONTENT = ("requests", "names", "calls", "rollouts", "run_reuse", "claims")

_CALL_COLUMNS = ("provider", "model", "request_id", "k", "tokens_in", "tokens_out", "latency_s", "finish_reason",
                 "error", "run_id", "created_at", "response")
_ROLLOUT_REFS = ("student", "source", "pid", "target", "run")
_REUSE_REFS = ("run", "student", "source", "pid", "target")


@dataclass
class MergeResult:
    """What a merge added to the target, per table, and one line per difference found."""

    added: dict[str, int] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)


async def merge_stores(into: str | os.PathLike[str], sources: Sequence[str | os.PathLike[str]], *,
                       prefer: str | os.PathLike[str] | None = None) -> MergeResult:
    """Merge the stores ``sources`` into the store ``into`` (created if missing), in order. A missing
    source, the target among the sources, or ``prefer`` not among them is a ValueError."""
    target = Path(into)
    paths = [Path(s) for s in sources]
    for p in paths:
        if not p.is_file():
            raise ValueError(f"{p}: no such store")
        if target.exists() and p.resolve() == target.resolve():
            raise ValueError(f"{p}: a store cannot be merged into itself")
    preferred = None if prefer is None else Path(prefer).resolve()
    if preferred is not None and preferred not in {p.resolve() for p in paths}:
        raise ValueError(f"--prefer {prefer}: not one of the stores merged")
    for p in [target, *paths]:  # each at this schema version (migrated, or refused when newer)
        async with Store.open(p, readonly=p.exists() and not os.access(p, os.W_OK)):
            pass
    result = MergeResult()
    con = sqlite3.connect(target.absolute().as_uri(), uri=True, isolation_level=None)
    try:
        con.execute("PRAGMA busy_timeout = 10000")
        for name, (n_args, fn) in SQL_FUNCTIONS.items():
            con.create_function(name, n_args, fn, deterministic=True)
        for p in paths:
            _merge_one(con, p, p.resolve() == preferred, result)
    finally:
        con.close()
    return result


def _merge_one(con: sqlite3.Connection, source: Path, preferred: bool, result: MergeResult) -> None:
    con.execute("ATTACH DATABASE ? AS src", (f"{source.absolute().as_uri()}?mode=ro",))
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            result.conflicts += _conflicts(con, source, preferred)
            for table, sql in _statements(con, preferred):
                result.added[table] = result.added.get(table, 0) + con.execute(sql).rowcount
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.execute("DETACH DATABASE src")


def _conflicts(con: sqlite3.Connection, source: Path, preferred: bool) -> list[str]:
    kept = f"kept {source}'s (--prefer)" if preferred else "kept the first"
    calls = con.execute("""
        SELECT s.key FROM src.calls s JOIN main.calls d ON d.key = s.key
        WHERE s.response IS NOT NULL AND d.response IS NOT NULL
              AND ladder_text(s.response) IS NOT ladder_text(d.response)
        ORDER BY s.rowid""").fetchall()
    families = con.execute("""
        SELECT s.pid, s.source, s.granularity FROM src.families s
        JOIN main.families d ON d.pid = s.pid AND d.source = s.source AND d.granularity = s.granularity
        WHERE ladder_text(s.family) IS NOT ladder_text(d.family)
        ORDER BY s.rowid""").fetchall()
    return ([f"call {unpack_key(key)}: {source} holds another answer; {kept}" for (key,) in calls]
            + [f"family {pid} of '{src}{'@' + gran if gran else ''}': {source} holds another; {kept}"
               for pid, src, gran in families])


def _statements(con: sqlite3.Connection, preferred: bool) -> list[tuple[str, str]]:
    """(table, statement) copying the attached source into the target, in an order that has each
    row's references in place before it."""
    verb = "INSERT OR REPLACE" if preferred else "INSERT OR IGNORE"
    # a call answered in the source replaces one that failed in the target; the preferred source's
    # answer replaces any
    update = "excluded.response IS NOT NULL" + ("" if preferred else " AND calls.response IS NULL")
    refs = ", ".join(f"(SELECT id FROM main.names WHERE name = r.{'run_id' if n == 'run' else n})"
                     for n in _ROLLOUT_REFS)
    statements = [
        ("requests", "INSERT OR IGNORE INTO main.requests (digest, body) SELECT digest, body FROM src.requests "
                     "ORDER BY id"),
        ("names", "INSERT OR IGNORE INTO main.names (name) SELECT name FROM src.names ORDER BY id"),
        # WHERE true: SQLite's parser needs it between a SELECT and ON CONFLICT
        ("calls", f"""
            INSERT INTO main.calls (key, {', '.join(_CALL_COLUMNS)})
            SELECT s.key, {', '.join('q.id' if c == 'request_id' else 's.' + c for c in _CALL_COLUMNS)}
            FROM src.calls s JOIN src.requests sq ON sq.id = s.request_id
                 JOIN main.requests q ON q.digest = sq.digest
            WHERE true ORDER BY s.rowid
            ON CONFLICT (key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _CALL_COLUMNS)}
            WHERE {update}"""),
        ("rollouts", f"""
            {verb} INTO main.rollouts ({', '.join(n + '_ref' for n in _ROLLOUT_REFS)}, k, call_key, label, reason,
                                      extracted, status, created_at, response)
            SELECT {refs}, r.k, r.call_key, r.label, r.reason, r.extracted, r.status, r.created_at, r.response
            FROM src.rollouts_named r ORDER BY r.seq"""),
        ("run_reuse", f"""
            INSERT OR IGNORE INTO main.run_reuse ({', '.join(n + '_ref' for n in _REUSE_REFS)}, k, call_key)
            SELECT {', '.join(f"(SELECT m.id FROM main.names m JOIN src.names s ON s.name = m.name "
                              f"WHERE s.id = u.{n}_ref)" for n in _REUSE_REFS)}, u.k, u.call_key
            FROM src.run_reuse u"""),
    ]
    tables = [name for (name,) in con.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
    return statements + [(t, f"{verb} INTO main.{t} SELECT * FROM src.{t} ORDER BY rowid")
                         for t in tables if t not in _BY_CONTENT]
