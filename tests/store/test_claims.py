"""One store, many processes: a call another store (process) is asking is waited for, not asked again;
a claim whose process is gone or whose lease lapsed is taken over. Two stores on one file stand for two
processes in the first tests (each store claims as itself); the last two run `ladder probe` twice."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

from oracleladder.clients import ChatRequest, Client
from oracleladder.store import Store
from oracleladder.store.rows import pack_key
from oracleladder.testing import FakeProvider, LoopbackServer
from tests.helpers import rows
from tests.helpers.terminal import ladder

REQUEST = ChatRequest(provider="openai", model="student", messages=[{"role": "user", "content": "What is 2 + 2?"}],
                      params={"max_tokens": 16})


def _claims(path: Path) -> list[tuple]:
    return rows(path, "SELECT owner, expires FROM claims")


async def test_a_call_another_process_is_asking_is_waited_for_not_asked_again(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    answer = asyncio.Event()

    async def slow(request: ChatRequest) -> str:
        await answer.wait()
        return r"\boxed{4}"

    async with Store.open(path) as one, Store.open(path) as other:
        first, second = FakeProvider(slow), FakeProvider(slow)
        asking = asyncio.create_task(Client(first, model="student", cache=one).complete(REQUEST))
        while not first.requests:
            await asyncio.sleep(0.01)
        waiter = Client(second, model="student", cache=other)
        waiting = asyncio.create_task(waiter.complete(REQUEST))
        await asyncio.sleep(0.5)  # a few of its polls
        assert not waiting.done() and second.requests == [] and len(_claims(path)) == 1
        answer.set()
        assert (await asking).text == (await waiting).text == r"\boxed{4}"
        assert len(first.requests) == 1 and second.requests == []
        assert waiter.usage.cache_hits == 1 and waiter.usage.requests == 0
        assert _claims(path) == []  # stored with its answer, the claim ended


async def test_a_lapsed_claim_or_one_of_a_gone_process_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    dead_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has it
    here = socket.gethostname()
    claimers = {"elsewhere:4242:777/0a1b2c3d": time.time() - 1,  # another host's, its lease lapsed
                f"{here}:{dead_pid}:777/0a1b2c3d": time.time() + 3600}  # this host's, its process gone
    async with Store.open(path):  # made at the present schema
        pass
    for owner, expires in claimers.items():
        _write(path, "INSERT INTO claims (key, owner, expires) VALUES (?, ?, ?)",
               (pack_key(REQUEST.key()), owner, expires))
        async with Store.open(path) as store:
            provider = FakeProvider(lambda r, owner=owner: owner)
            assert (await Client(provider, model="student", cache=store).complete(REQUEST)).text == owner
            assert len(provider.requests) == 1
        assert _claims(path) == []
        _write(path, "DELETE FROM calls", ())


async def test_a_cancelled_call_ends_its_claim(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Store.open(path) as store:
        provider = FakeProvider(lambda r: asyncio.Event().wait())
        asking = asyncio.create_task(Client(provider, model="student", cache=store).complete(REQUEST))
        while not provider.requests:
            await asyncio.sleep(0.01)
        assert len(_claims(path)) == 1
        asking.cancel()
        await asyncio.gather(asking, return_exceptions=True)
        await store.flush()
        assert _claims(path) == []


def _write(path: Path, sql: str, params: tuple) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute(sql, params)
    finally:
        con.close()


def _probe(store: Path, url: str, *more: str) -> subprocess.Popen:
    # --include-unusable: every one of the six families' 100 calls, the first's unusable reference included (the
    # leak rule drops its m1, whose gold {-1,1} is its corrected answer x=\pm 1: 2 Stage 0 calls fewer than 102)
    return ladder("probe", "--student", "openai/student", "--k", "2", "--limit", "6", "--store", str(store),
                  "--base-url", url, "--json", "--include-unusable", *more, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _summary(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-2000:]
    return json.loads(out.decode().strip().splitlines()[-1])


def test_two_probes_on_one_store_pay_each_call_once(sample_store: Path) -> None:
    """Issue 32: two probes of the same families on one store paid calls twice. The second starts while
    the first has calls in flight at a slower server: the calls the first has claimed it waits for, any
    other it asks at its own server."""
    with LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=0.5) as slow, \
            LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=0.05) as fast:
        first = _probe(sample_store, slow.openai_base_url, "--concurrency", "4")
        deadline = time.monotonic() + 120
        while slow.total < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        second = _probe(sample_store, fast.openai_base_url, "--concurrency", "4")
        summaries = [_summary(first), _summary(second)]
    [(calls,)] = rows(sample_store, "SELECT COUNT(*) FROM calls")
    assert calls == summaries[0]["calls"] == summaries[1]["calls"] == 100
    assert slow.total >= 4
    assert slow.total + fast.total == sum(s["requests"] for s in summaries) == calls  # no call asked twice
    assert all(s["cache_hits"] == calls - s["requests"] for s in summaries)
    assert rows(sample_store, "SELECT COUNT(*) FROM rollouts") == [(calls,)] and _claims(sample_store) == []


def test_a_killed_probes_claims_are_taken_over(sample_store: Path) -> None:
    with LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=60) as hung, \
            LoopbackServer(script=lambda m, b: r"\boxed{0}") as server:
        killed = _probe(sample_store, hung.openai_base_url, "--concurrency", "4")
        deadline = time.monotonic() + 120
        while hung.total < 4 and time.monotonic() < deadline:  # its calls in flight (and queued), each claimed
            time.sleep(0.1)
        killed.kill()
        killed.wait(timeout=30)
        left = _claims(sample_store)
        assert len(left) >= 4 and {owner.split(":")[1] for owner, _ in left} == {str(killed.pid)}
        assert all(expires > time.time() for _, expires in left)  # their leases hold: the dead pid tells
        summary = _summary(_probe(sample_store, server.openai_base_url))
    assert summary["requests"] == server.total == summary["calls"] == 100
    assert _claims(sample_store) == []
