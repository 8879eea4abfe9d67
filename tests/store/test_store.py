"""The SQLite store, on real files: migrations, version refusal, round trips, group commit, crashes."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from oracleladder.clients.base import ChatRequest, ChatResult
from oracleladder.schemas.models import (
    CheckResult,
    CodeProblem,
    CodeTest,
    Family,
    FamilyReport,
    MathProblem,
    Milestone,
    Provenance,
    Rollout,
    Verdict,
    to_released,
)
from oracleladder.schemas.types import Label, MilestoneType
from oracleladder.store import SCHEMA_VERSION, Store, StoreError, StoreVersionError
from tests.helpers import REPO


def req(i: int, k: int = 0) -> ChatRequest:
    return ChatRequest(provider="openai", model="gpt-x",
                       messages=[{"role": "user", "content": f"question {i}"}],
                       params={"temperature": 0.0}, k=k)


def res(i: int) -> ChatResult:
    return ChatResult(text=f"answer {i}", tokens_in=10 + i, tokens_out=20 + i, latency_s=0.5,
                      finish_reason="stop")


def family(pid: str = "p1", source: str = "release", granularity=None) -> Family:
    return Family(
        pid=pid, parent_prompt="Compute 2+3.", parent_answer="5",
        milestones=[
            Milestone(prompt="What is 2?", answer="2", type=MilestoneType.COMPUTE),
            Milestone(prompt="Add.", answer="5", type=MilestoneType.INTEGRATE, description="sum"),
        ],
        milestone_gold_invalid=[1],
        provenance=Provenance(source=source, granularity=granularity, attempts=2),
    )


def tables(path: Path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()


# ------------------------------------------------------------------ schema and versions


async def test_migrates_empty_file_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "ladder.sqlite"
    path.touch()  # an empty file is an empty database
    store = await Store.open(path)
    await store.put_call(req(1), res(1))
    await store.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    assert {"calls", "problems", "families", "compile_attempts", "reports", "rollouts",
            "runs", "meta"} <= tables(path)
    async with Store.open(path) as store:  # reopening applies nothing and keeps the data
        assert await store.call_count() == 1
        assert (await store.get_call(req(1).key())) == res(1)
        assert await store.integrity_check() == "ok"


async def test_creates_missing_file_and_parent(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "x.sqlite"
    async with Store.open(path) as store:
        assert await store.call_count() == 0
    assert path.is_file()


async def test_read_only_open_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "ro.sqlite"
    async with Store.open(path) as store:
        await store.put_call(req(1), res(1))
        run_id = await store.start_run("probe", {})
    async with Store.open(path, readonly=True) as store:
        assert (await store.get_call(req(1).key())) == res(1)
        assert [r.id for r in await store.runs()] == [run_id]
        with pytest.raises(StoreError, match="opened read-only"):
            await store.put_call(req(2), res(2))
    with pytest.raises(StoreError, match="no such store"):
        await Store.open(tmp_path / "missing.sqlite", readonly=True)
    assert not (tmp_path / "missing.sqlite").exists()
    with pytest.raises(StoreError, match="is a folder"):
        await Store.open(tmp_path)


async def test_refuses_newer_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    async with Store.open(path):
        pass
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 41}")
    con.commit()
    con.close()
    with pytest.raises(StoreVersionError) as info:
        await Store.open(path)
    msg = str(info.value)
    assert str(SCHEMA_VERSION + 41) in msg and f"version {SCHEMA_VERSION}" in msg
    assert "newer" in msg and str(path) in msg
    assert info.value.found == SCHEMA_VERSION + 41 and info.value.supported == SCHEMA_VERSION
    with pytest.raises(StoreVersionError):
        async with Store.open(path):
            pass
    con = sqlite3.connect(path)  # the refused file is left as it was
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 41
    con.close()


async def test_partial_migration_is_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps are applied in order from the file's version: a v1 file gets only the later steps."""
    import oracleladder.store.sqlite as sq

    path = tmp_path / "old.sqlite"
    async with Store.open(path):
        pass
    extra = ("CREATE TABLE added_later (x INTEGER)",)
    monkeypatch.setattr(sq, "MIGRATIONS", sq.MIGRATIONS + (extra,))
    monkeypatch.setattr(sq, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    async with Store.open(path):
        pass
    assert "added_later" in tables(path)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    con.close()


async def test_rejects_non_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not an OracleLadder store"):
        await Store.open(path)


# ------------------------------------------------------------------ calls


async def test_call_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Store.open(path) as store:
        assert await store.get_call(req(1).key()) is None
        await store.put_call(req(1), res(1), run_id="r1")
        await store.put_call(req(2), None, error="RateLimited: 429", run_id="r1")
        assert await store.get_call(req(1).key()) == res(1)
        assert await store.get_call(req(2).key()) is None  # failures are not cache hits
        rec = await store.get_call_record(req(2).key())
        assert rec is not None and rec.error == "RateLimited: 429" and rec.result is None
        assert rec.request == req(2).model_dump(mode="json") and rec.run_id == "r1"
        # a later failure never replaces a success; a later success replaces a failure
        await store.put_call(req(1), None, error="boom")
        await store.put_call(req(2), res(2))
        assert await store.call_count() == 2
        assert await store.call_count(successful_only=True) == 2
    async with Store.open(path) as store:
        assert await store.get_call(req(1).key()) == res(1)
        assert await store.get_call(req(2).key()) == res(2)
        rec1 = await store.get_call_record(req(1).key())
        assert rec1 is not None and rec1.error is None and rec1.provider == "openai"
        assert rec1.model == "gpt-x" and rec1.result == res(1)
        assert [c.key for c in await store.calls(run_id="r1")] == [req(1).key()]


async def test_concurrent_puts_all_land_with_group_commit(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    n = 64 * 8
    async with Store.open(path) as store:
        async def worker(w: int) -> None:
            for j in range(8):
                i = w * 8 + j
                await store.put_call(req(i), res(i), run_id="run")
                assert await store.get_call(req(i).key()) == res(i)

        await asyncio.gather(*(worker(w) for w in range(64)))
        assert await store.call_count() == n
        assert store.commits < n / 4, f"{store.commits} transactions for {n} puts"
    async with Store.open(path) as store:
        assert await store.call_count() == n
        for i in range(n):
            assert await store.get_call(req(i).key()) == res(i)


async def test_unwaited_puts_land_on_flush_and_close(tmp_path: Path) -> None:
    path = tmp_path / "f.sqlite"
    store = await Store.open(path)
    for i in range(300):
        await store.put_call(req(i), res(i), wait=False)
    await store.flush()
    assert await store.call_count() == 300
    for i in range(300, 500):
        await store.put_call(req(i), res(i), wait=False)
    await store.close()
    await store.close()  # twice is fine
    with pytest.raises(StoreError, match="closed"):
        await store.put_call(req(0), res(0))
    async with Store.open(path) as store:
        assert await store.call_count() == 500


async def test_miss_reads_calls_written_by_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "two.sqlite"
    async with Store.open(path) as a, Store.open(path) as b:
        await a.put_call(req(7), res(7))
        assert await b.get_call(req(7).key()) == res(7)


async def test_a_bad_write_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    async with Store.open(path) as store:
        rid = await store.start_run("probe", {"k": 1}, run_id="dup")

        async def dup() -> None:
            await store.start_run("probe", {}, run_id=rid)  # primary key clash

        results = await asyncio.gather(
            dup(), *(store.put_call(req(i), res(i)) for i in range(20)), return_exceptions=True)
        assert isinstance(results[0], StoreError)
        assert all(r is None for r in results[1:])
        assert await store.call_count() == 20


# ------------------------------------------------------------------ the other tables


async def test_families_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "fam.sqlite"
    f_rel = family("p1")
    f_t = family("p1", source="openai/gpt-5.4", granularity="fine")
    f_t2 = family("p2", source="openai/gpt-5.4", granularity="fine")
    async with Store.open(path) as store:
        await store.put_family(f_rel)
        await store.put_family(f_t)
        await store.put_family(f_t2)
        await store.put_family(f_rel)  # replace in place
    async with Store.open(path) as store:
        assert await store.get_family("p1") == f_rel
        assert await store.get_family("p1", source="openai/gpt-5.4") == f_t
        assert await store.get_family("p1", source="openai/gpt-5.4", granularity="fine") == f_t
        assert await store.get_family("p1", source="openai/gpt-5.4", granularity="coarse") is None
        assert await store.get_family("nope") is None
        assert await store.families() == [f_rel, f_t, f_t2]
        assert await store.families(source="openai/gpt-5.4") == [f_t, f_t2]
        assert await store.families(source="release") == [f_rel]
        assert await store.released_records(source="release") == [to_released(f_rel)]
        assert await store.sources() == ["openai/gpt-5.4", "release"]


async def test_problems_attempts_reports_runs_rollouts(tmp_path: Path) -> None:
    path = tmp_path / "all.sqlite"
    math = MathProblem(pid="m1", problem="2+3?", answer="5")
    code = CodeProblem(pid="c1", statement="echo", tests=[CodeTest(input="1", output="1")])
    report = FamilyReport(pid="p1", checks=[CheckResult(check="schema", passed=True),
                                            CheckResult(check="leak", passed=False, reason="x",
                                                        milestone=0)])
    async with Store.open(path) as store:
        assert await store.put_problems([math, code]) == 2
        await store.put_compile_attempt("p1", "openai/gpt-5.4", 0, plan={"milestones": []},
                                        errors=["milestone 0: leak"], passed=False)
        await store.put_compile_attempt("p1", "openai/gpt-5.4", 1, plan={"milestones": [1]},
                                        errors=[], passed=True)
        await store.put_report(report, "openai/gpt-5.4")
        rid = await store.start_run("probe", {"student": "local/x", "k": 2})
        rollouts = [
            Rollout(run_id=rid, student="local/x", pid="p1", target="C1_direct", k=k,
                    call_key=req(k).key(), response=f"r{k}",
                    verdict=Verdict(label=Label.ACCEPT if k else Label.NOT_ACCEPT, reason="why",
                                    extracted="5" if k else None))
            for k in range(2)
        ]
        await asyncio.gather(*(store.put_rollout(r) for r in rollouts))
        await store.finish_run(rid, "done", {"tokens_in": 30, "tokens_out": 40, "cost_usd": 0.25,
                                             "cache_hits": 1})
    async with Store.open(path) as store:
        assert await store.get_problem("m1") == math
        assert await store.get_problem("c1") == code
        assert await store.problems() == [math, code]
        assert await store.problems("code") == [code]
        atts = await store.compile_attempts("p1", "openai/gpt-5.4")
        assert [(a.attempt, a.passed, a.errors) for a in atts] == [
            (0, False, ["milestone 0: leak"]), (1, True, [])]
        assert atts[1].plan == {"milestones": [1]}
        got = await store.get_report("p1", "openai/gpt-5.4")
        assert got == report and not got.passed
        assert await store.reports() == [report]
        run = await store.get_run(rid)
        assert run is not None and run.status == "done" and run.kind == "probe"
        assert run.tokens_in == 30 and run.tokens_out == 40 and run.cost_usd == 0.25
        assert run.config == {"student": "local/x", "k": 2} and run.finished_at is not None
        assert run.usage == {"tokens_in": 30, "tokens_out": 40, "cost_usd": 0.25, "cache_hits": 1}
        assert sorted(await store.rollouts(student="local/x"), key=lambda r: r.k) == rollouts
        assert await store.rollouts(student="local/x", run_id="other") == []
        assert await store.rollout_count(student="local/x", run_id=rid) == 2
        # a rerun reusing the cached calls neither duplicates the rollouts nor takes them over (issue 43)
        rid2 = await store.start_run("probe", {})
        for r in rollouts:
            await store.put_rollout(r.model_copy(update={"run_id": rid2}))
        assert await store.rollout_count(student="local/x") == 2
        assert {r.run_id for r in await store.rollouts(student="local/x")} == {rid}
        assert (await store.get_run(rid2)).reused == 2


# ------------------------------------------------------------------ crash safety

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from oracleladder.clients.base import ChatRequest, ChatResult
    from oracleladder.store import Store

    async def main(path):
        store = await Store.open(path)
        async def worker(w):
            i = 0
            while True:
                n = w * 1_000_000 + i
                r = ChatRequest(provider="p", model="m",
                                messages=[{"role": "user", "content": f"q{n}" + "x" * 500}])
                await store.put_call(r, ChatResult(text=f"a{n}" * 50, tokens_in=n))
                print(r.key(), flush=True)   # printed only once its put is committed
                i += 1
        await asyncio.gather(*(worker(w) for w in range(16)))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_sigkill_mid_run_loses_nothing_awaited(tmp_path: Path) -> None:
    path = tmp_path / "crash.sqlite"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    acked: list[str] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while len(acked) < 1500 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    acked += [ln.strip() for ln in rest.splitlines() if len(ln.strip()) == 64]
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 1500, err

    async def check() -> None:
        async with Store.open(path) as store:
            assert await store.integrity_check() == "ok"
            for key in acked:
                assert await store.get_call(key) is not None, key
            assert await store.call_count() >= len(acked)
            await store.put_call(req(1), res(1))  # and it is writable again

    asyncio.run(check())


# ------------------------------------------------------------------ many gets at once (their speed: bench/store_lookup.py)


async def test_cached_gets_at_once_all_hit(tmp_path: Path) -> None:
    path = tmp_path / "gets.sqlite"
    reqs = [req(i) for i in range(2000)]
    async with Store.open(path) as store:
        await asyncio.gather(*(store.put_call(r, res(i)) for i, r in enumerate(reqs)))
    keys = [r.key() for r in reqs]
    async with Store.open(path) as store:
        sem = asyncio.Semaphore(64)

        async def get(k: str) -> ChatResult | None:
            async with sem:
                return await store.get_call(k)

        got = await asyncio.gather(*(get(k) for k in keys))
        assert all(g is not None for g in got)


async def test_v1_rollouts_survive_the_source_migration(tmp_path: Path) -> None:
    """A store written at schema v1 opens at the current version with its rollouts intact."""
    import sqlite3

    from oracleladder.store.schema import MIGRATIONS

    path = tmp_path / "v1.sqlite"
    con = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        con.execute(statement)
    con.execute(
        "INSERT INTO rollouts (student, pid, target, k, call_key, run_id, response, label, reason, extracted, created_at)"
        " VALUES ('s', 'p', 'C1_direct', 0, 'key', 'r', 'text', 'ACCEPT', 'equivalent', '1', 'now')"
    )
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    async with Store.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION >= 2
        [rollout] = await store.rollouts(student="s")
        assert (rollout.source, rollout.target, rollout.verdict.accepted) == ("release", "C1_direct", True)
        assert await store.rollouts(student="s", source="openai/t") == []
