"""Schema v13 on real files: the calls a store keyed by their server's URL are keyed again by their
model (``ChatRequest.key``), so a store made before keeps hitting its cache at a new port, a new host
or a replica, with nothing lost: a store written by the code of 083f1f3 (tests/data/before-house) and
a small v12 store built row by row as that code wrote them."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import ChatRequest, Client
from oracleladder.schemas import Family
from oracleladder.schemas.calls import served_identity
from oracleladder.schemas.jsonl import read_unique
from oracleladder.store import Store
from oracleladder.store.rows import pack, pack_key
from oracleladder.store.schema import MIGRATIONS
from oracleladder.testing import FakeProvider, LoopbackServer
from tests.helpers import rows, store_at
from tests.test_call_keys import AT_A_SERVER, AT_A_SERVER_BEFORE, digest, probe_requests

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house"
SERVED = "/models/smollm2.gguf"  # the name llama-cpp-python's server lists: its GGUF's path
IDENTITY = served_identity(SERVED)  # how a call names it since v21 (and, keyed again by v23, these calls too)


def old_key(request: ChatRequest, endpoint: str | None) -> str:
    """A call's key as the code before v13 computed it: its request with its server's URL."""
    data = {"response_schema": None, **request.model_dump(mode="json", exclude={"name", "cache_tag"}),
            **({"endpoint": endpoint} if endpoint else {})}
    payload = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def test_the_old_keys_here_are_the_keys_of_the_code_before(release_data: Path) -> None:
    families = list(read_unique(release_data / "families_sample.jsonl", Family))[:3]
    assert digest([f"{line} {old_key(r, AT_A_SERVER)}"
                   for line, r in probe_requests(families, "openai/s", AT_A_SERVER)]) == AT_A_SERVER_BEFORE


def _put_call(con: sqlite3.Connection, request: ChatRequest, endpoint: str | None, at: str, answer: str | None) -> str:
    """A call as the code before v13 stored it (its request with its server's URL); returns its key."""
    body = json.dumps({**request.model_dump(mode="json", exclude={"k", "name", "cache_tag"}), "endpoint": endpoint})
    con.execute("INSERT OR IGNORE INTO requests (digest, body) VALUES (?, ?)",
                (hashlib.sha256(body.encode()).digest(), pack(body)))
    key = old_key(request, endpoint)
    con.execute("INSERT INTO calls (key, provider, model, request_id, k, error, created_at, response) "
                "VALUES (?, ?, ?, (SELECT id FROM requests WHERE body = ?), ?, ?, ?, ?)",
                (pack_key(key), request.provider, request.model, pack(body), request.k,
                 None if answer else "RequestTimeout: timed out", at, answer and pack(answer)))
    return key


def _put_rollout(con: sqlite3.Connection, student: str, pid: str, k: int, key: str) -> None:
    names = (student, "release", pid, "C1_direct", "run-1")
    con.executemany("INSERT OR IGNORE INTO names (name) VALUES (?)", [(n,) for n in names])
    ref = "(SELECT id FROM names WHERE name = ?)"
    con.execute(f"INSERT INTO rollouts (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, label, "
                f"reason, created_at) VALUES ({ref}, {ref}, {ref}, {ref}, ?, ?, {ref}, 'ACCEPT', '', '2026-12-01')",
                (*names[:4], k, pack_key(key), names[4]))


def _client(provider: FakeProvider, name: str, store: Store | None = None, model: str = SERVED) -> Client:
    return Client(provider, model=model, name=name, cache=store)


def _request(name: str, pid: str, k: int = 0, model: str = SERVED) -> ChatRequest:
    """The call a client of ``name`` at a server serving SERVED makes for ``pid``: the model as the server
    listed it (the code before v21), or as a call names it since, by its identity (IDENTITY)."""
    return _client(FakeProvider(str, endpoint=AT_A_SERVER), name, model=model).request(f"Solve {pid}.", k=k,
                                                                                       max_tokens=64)


async def test_a_v12_store_is_rekeyed_on_open_and_hits_at_another_address(tmp_path: Path) -> None:
    path = tmp_path / "v12.sqlite"
    con = store_at(path, 12)
    student, teacher = "openai/smollm2", "openai/teacher"
    keys = {}
    for pid in ("p1", "p2", "p3"):
        for k in (0, 1):
            keys[pid, k] = _put_call(con, _request(student, pid, k), "http://127.0.0.1:8101/v1",
                                     "2026-12-01T10:00:00.000+00:00", f"answer {pid} {k} at 8101")
            _put_rollout(con, student, pid, k, keys[pid, k])
    # the same call asked again at a replica (the run of issue 31 that paid twice), with its rollout
    replica = _put_call(con, _request(student, "p1"), "http://127.0.0.1:8102/v1", "2026-12-01T10:00:01.000+00:00",
                        "answer p1 0 at 8102")
    _put_rollout(con, student, "p1", 0, replica)
    # a failed call and its failed job; a teacher's call (no rollout: the runs of its time name it)
    failed = _put_call(con, _request(student, "p4"), "http://127.0.0.1:8101/v1", "2026-12-01T10:00:02.000+00:00", None)
    con.execute("INSERT INTO failed_jobs (student, source, pid, target, k, call_key, run_id, reason, created_at) "
                "VALUES (?, 'release', 'p4', 'C1_direct', 0, ?, 'run-1', 'timed out', '2026-12-01')", (student, failed))
    con.execute("INSERT INTO runs (id, kind, config, started_at, finished_at, status) VALUES ('compile-1', 'compile', "
                "?, '2026-12-01T09:00:00.000+00:00', '2026-12-01T09:30:00.000+00:00', 'done')",
                (json.dumps({"teacher": teacher}),))
    _put_call(con, _request(teacher, "t1"), "http://127.0.0.1:8101/v1", "2026-12-01T09:10:00.000+00:00", "a plan")
    # a call to OpenAI itself: its key stays
    hosted = ChatRequest(provider="openai", model="gpt-5.4", messages=[{"role": "user", "content": "Solve p1."}])
    _put_call(con, hosted, None, "2026-12-01T11:00:00.000+00:00", "hosted answer")
    con.close()

    async with Store.open(path) as store:
        assert rows(path, "PRAGMA user_version") == [(len(MIGRATIONS),)]
        assert await store.call_count() == 10 and await store.rollout_count() == 7  # nothing lost
        assert await store.get_call(hosted.key()) is not None and hosted.key() == old_key(hosted, None)
        by_call = {(r.pid, r.k, r.response) for r in await store.rollouts()}
        assert by_call == ({(pid, k, f"answer {pid} {k} at 8101") for pid, k in keys}
                           | {("p1", 0, "answer p1 0 at 8102")})
        # the replica's copy keeps its old key, and its rollout its answer
        assert (await store.get_call(replica)).text == "answer p1 0 at 8102"
        assert [j.call_key for j in await store.failed_jobs(student)] == [_request(student, "p4", model=IDENTITY).key()]
        # keyed by the file's identity (v23: v21 left these bodies of before v13 as they were), each by the
        # name v15 gave it: the student of its answers, or the teacher the runs of its time called
        assert await store.spelled_before("openai", IDENTITY) == {SERVED: 8}

        # the same student at a new host and port, and the teacher, as a call names the model now: every call a hit
        provider = FakeProvider(lambda r: "asked again", endpoint="http://10.1.2.3:9000/v1")
        for (pid, k) in keys:
            got = await _client(provider, student, store, IDENTITY).complete(_request(student, pid, k, IDENTITY))
            assert got.text == f"answer {pid} {k} at 8101"
        assert (await _client(provider, teacher, store, IDENTITY).complete(_request(teacher, "t1", model=IDENTITY))).text \
            == "a plan"
        assert provider.requests == []
    stored = rows(path, "SELECT key FROM calls ORDER BY rowid")

    async with Store.open(path):  # opened again: nothing is keyed again
        pass
    assert rows(path, "SELECT key FROM calls ORDER BY rowid") == stored


def test_a_store_from_before_hits_its_cache_at_new_replicas(tmp_path: Path) -> None:
    """The store of 083f1f3 was probed at a loopback server long gone: the same probe at two new
    ones, replicas, asks nothing."""
    store = tmp_path / "before.sqlite"
    shutil.copy(BEFORE / "before.sqlite", store)
    conditions = ["--conditions", "C1", "--conditions", "C2", "--conditions", "C3", "--conditions", "C2-random",
                  "--conditions", "C2-generic", "--conditions", "C3-mismatched"]
    with LoopbackServer(script=lambda m, b: r"\boxed{0}") as srv, LoopbackServer(script=lambda m, b: "") as other:
        urls = ["--base-url", srv.openai_base_url, "--base-url", other.openai_base_url]
        result = CliRunner().invoke(app, ["probe", "--student", "openai/student", *urls, "--k", "2", "--max-tokens",
                                          "256", *conditions, "--include-unusable", "--keep-leaking", "--store",
                                          str(store), "--json"])
        # the same 102 calls as the old store's probe, which kept the milestones the leak rule drops
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        assert srv.total == other.total == 0
    assert summary["requests"] == 0 and summary["cache_hits"] == summary["calls"] == 102
    assert rows(store, "SELECT COUNT(*) FROM calls") == [(102,)]
