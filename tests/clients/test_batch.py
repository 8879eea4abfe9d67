"""Batch mode (`--batch`) end to end on the loopback server's OpenAI and Anthropic batch APIs: a run
killed after submitting resumes without submitting anything again, only the rows without an answer
are submitted again, compile goes in rounds, and batch answers are the call cache's like online ones."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import load_prices
from oracleladder.clients.batch import make_batch_client
from oracleladder.clients.errors import BadRequestError
from oracleladder.clients.rounds import Rounds
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from oracleladder.testing.batches import LOST_CREATES, NOT_CREATED
from tests.helpers.roots import BAD, GOOD

LADDER = [sys.executable, "-m", "oracleladder.cli"]
FAST = ["--batch", "--batch-poll", "0.1", "--batch-quiet", "0.3"]
ANSWER = r"The answer is \boxed{0}."
runner = CliRunner()


def _import(store: Path, release_data: Path) -> None:
    result = runner.invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)])
    assert result.exit_code == 0, result.output


def _probe_args(wire: str, server: LoopbackServer, store: Path) -> list[str]:
    url = server.openai_base_url if wire == "openai" else server.anthropic_base_url
    return ["probe", "--student", f"{wire}/student", "--k", "1", "--limit", "3", "--store", str(store),
            "--base-url", url, "--json"]


def _summary(result) -> dict:  # type: ignore[no-untyped-def]
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _count(store: Path, sql: str) -> Any:
    con = sqlite3.connect(store)
    try:
        return con.execute(sql).fetchone()[0]  # the first column of the first row
    except sqlite3.OperationalError:  # the store is not made yet
        return 0
    finally:
        con.close()


def _killed_after_submission(args: list[str], store: Path, server: LoopbackServer,
                             ready: Callable[[], bool] | None = None) -> None:
    """Run the CLI in a process of its own and SIGKILL it once ``ready()`` (by default: once its batch's
    id is in the store), before any result."""
    err = store.with_suffix(".stderr")
    ready = ready or (lambda: _count(store, "SELECT COUNT(*) FROM batches WHERE state != 'creating'") > 0)
    with err.open("w") as sink:  # a file, not a pipe nobody reads while the process runs
        proc = subprocess.Popen([*LADDER, *args], stdout=subprocess.DEVNULL, stderr=sink)
        deadline = time.monotonic() + 120
        while not ready() and time.monotonic() < deadline:
            assert proc.poll() is None, err.read_text()[-2000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert server.batches.created == 1
    assert _count(store, "SELECT COUNT(*) FROM rollouts") == 0  # killed before any result


def test_killed_batch_probe_resumes_without_submitting_again(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "kill.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=60) as server:
        args = _probe_args("openai", server, store)
        _killed_after_submission([*args, *FAST], store, server)
        rows = server.batches.stats()["batch_rows"]
        assert rows > 0 and _count(store, "SELECT requests FROM batches") == rows

        listed = runner.invoke(app, ["batches", "--store", str(store)])
        assert listed.exit_code == 0  # in flight: as submitted, or as its first poll found it
        assert re.search(rf"batch_loop0: (submitted|validating); {rows} requests", listed.output), listed.output
        server.batches.delay = 1.0  # the provider finishes it while the resumed run polls

        summary = _summary(runner.invoke(app, [*args, *FAST]))
        stats = server.stats()
        assert stats["batches"] == 1 and stats["batch_rows"] == rows  # 0 requests submitted twice
        assert set(Counter(stats["batch_rows_by_id"]).values()) == {1}
        assert stats["total"] == 0  # and none online
        assert summary["failed_jobs"] == [] and summary["successes"] == rows and summary["batch_rows_submitted"] == 0
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == rows  # every rollout stored
        assert _count(store, "SELECT state FROM batches") == "completed"


def test_cancelled_anthropic_batch_is_resubmitted_once_on_resume(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "cancel.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=60) as server:
        args = _probe_args("anthropic", server, store)
        _killed_after_submission([*args, *FAST], store, server)
        rows = server.batches.stats()["batch_rows"]

        cancelled = runner.invoke(app, ["batches", "--store", str(store), "--cancel"])
        assert cancelled.exit_code == 0, cancelled.output
        assert server.batches.cancels == 1 and "cancelled 1" in cancelled.output
        assert "msgbatch_loop0: ended" in runner.invoke(app, ["batches", "--store", str(store)]).output
        server.batches.delay = 0.5

        summary = _summary(runner.invoke(app, [*args, *FAST]))
        stats = server.stats()
        # the cancelled rows went once more, in one batch; nothing else was submitted
        assert stats["batches"] == 2 and set(stats["batch_rows_by_id"].values()) == {2}
        assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == rows


PRICES = {"date": "2026-01-01", "models": {"openai/student": {"input": 2.0, "output": 4.0},
                                           "anthropic/student": {"input": 2.0, "output": 4.0}}}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", ["errored", "expired"])
def test_only_rows_without_an_answer_are_submitted_again(tmp_path: Path, release_data: Path, wire: str,
                                                         fault: str) -> None:
    store = tmp_path / "faults.sqlite"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    _import(store, release_data)
    faults = {"batch_errors": 0.1} if fault == "errored" else {"expire_batches": 1}
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.3, **faults) as server:
        args = _probe_args(wire, server, store)
        summary = _summary(runner.invoke(app, [*args, *FAST, "--prices", str(prices)]))
        first = server.batches.batches[f"{'batch' if wire == 'openai' else 'msgbatch'}_loop0"]
        unanswered = {cid for cid, r in (first.results or {}).items() if r["kind"] != "succeeded"}
        by_id = server.stats()["batch_rows_by_id"]
        assert unanswered and len(unanswered) < len(first.rows)
        if fault == "errored":
            assert 0.02 <= len(unanswered) / len(first.rows) <= 0.25  # about 10%
        assert {cid for cid, n in by_id.items() if n == 2} == unanswered  # those, and only those, again
        assert set(by_id.values()) == {1, 2} and server.batches.created == 2
        assert summary["batch_rows_submitted"] == sum(by_id.values())
        assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(by_id)
        # paid at the batch price: half the online one
        assert summary["cost_usd"] == pytest.approx((summary["tokens_in"] * 1.0 + summary["tokens_out"] * 2.0) / 1e6)

        # a batch answer is the call cache's: the same run online asks nothing
        online = _summary(runner.invoke(app, args))
        assert online["requests"] == 0 and online["cache_hits"] == online["calls"] == len(by_id)
        assert server.total == 0


def test_rows_failing_every_round_are_failed_jobs_never_answers(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "failing.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, expire_batches=3) as server:
        result = runner.invoke(app, [*_probe_args("openai", server, store), *FAST])
        assert result.exit_code == 3, result.output  # finished, with failed jobs
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        third = server.batches.batches["batch_loop2"].results or {}
        expired_thrice = [cid for cid, r in third.items() if r["kind"] == "expired"]
        assert server.batches.created == 3 and expired_thrice  # 3 rounds, no more
        assert max(server.stats()["batch_rows_by_id"].values()) == 3
        assert len(summary["failed_jobs"]) == len(expired_thrice)
        assert all("no answer after 3 batch(es)" in j["reason"] for j in summary["failed_jobs"])
        assert _count(store, "SELECT COUNT(*) FROM failed_jobs") == len(expired_thrice)
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == len(server.stats()["batch_rows_by_id"]) - len(expired_thrice)


@pytest.mark.parametrize(("wire", "fault"), [("openai", "truncated"), ("openai", "not-json"),
                                             ("openai", "no-custom-id"), ("anthropic", "truncated"),
                                             ("anthropic", "no-custom-id")])
def test_a_results_row_that_cannot_be_read_is_its_calls_failure_alone(
        tmp_path: Path, release_data: Path, wire: str, fault: str, caplog: pytest.LogCaptureFixture) -> None:
    store = tmp_path / "rows.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, results_fault=fault) as server:
        summary = _summary(runner.invoke(app, [*_probe_args(wire, server, store), *FAST]))
        by_id = server.stats()["batch_rows_by_id"]
    # the unreadable row's call went again in a second batch, alone; every other row was read
    assert server.batches.created == 2 and sorted(Counter(by_id.values()).items()) == [(1, len(by_id) - 1), (2, 1)]
    assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(by_id)
    said = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
    assert len(said) == 1 and "1 results row(s) could not be read, their calls go again" in said[0]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_rows_with_different_answers_for_one_call_are_said_and_asked_again(
        tmp_path: Path, release_data: Path, wire: str, caplog: pytest.LogCaptureFixture) -> None:
    store = tmp_path / "twice.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, results_fault="duplicate") as server:
        summary = _summary(runner.invoke(app, [*_probe_args(wire, server, store), *FAST]))
        by_id = server.stats()["batch_rows_by_id"]
    assert server.batches.created == 2 and sorted(Counter(by_id.values()).items()) == [(1, len(by_id) - 1), (2, 1)]
    assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(by_id)
    assert _count(store, "SELECT COUNT(*) FROM rollouts WHERE response LIKE '%999%'") == 0  # neither row won
    assert any("1 call(s) have rows with different answers" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_empty_results_of_a_completed_batch_are_the_providers_error_not_resubmitted(
        tmp_path: Path, release_data: Path, wire: str) -> None:
    store = tmp_path / "empty.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, results_fault="empty") as server:
        args = [*_probe_args(wire, server, store), *FAST]
        result = runner.invoke(app, args)
        assert result.exit_code == 3, result.output  # finished, every job failed
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        rows = len(server.stats()["batch_rows_by_id"])
        assert server.batches.created == 1  # nothing submitted again
        assert len(summary["failed_jobs"]) == rows
        assert all("its results are empty: an error of the provider" in j["reason"] for j in summary["failed_jobs"])
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == 0
        assert _count(store, "SELECT state FROM batches") == "results_empty"

        # a rerun, after the report, submits them again
        again = _summary(runner.invoke(app, args))
        assert server.batches.created == 2 and again["failed_jobs"] == []
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == rows


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_batch_past_its_deadline_is_cancelled_and_its_rows_go_again(tmp_path: Path, release_data: Path,
                                                                      wire: str) -> None:
    store = tmp_path / "stuck.sqlite"
    _import(store, release_data)
    # the first batch never ends, and its cancel does not end it either
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, stuck_batches=1) as server:
        summary = _summary(runner.invoke(app, [*_probe_args(wire, server, store), *FAST, "--batch-deadline", "1"]))
        by_id = server.stats()["batch_rows_by_id"]
    assert server.batches.cancels == 1 and server.batches.created == 2 and set(by_id.values()) == {2}
    assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(by_id)


@pytest.mark.parametrize("lost_create", [None, "500"])
def test_compile_in_batch_mode_goes_in_rounds(tmp_path: Path, lost_create: str | None) -> None:
    """All first attempts in one batch, the re-asks of the rejected plans in the next; so too when the
    first batch's create reply is lost (the batch is looked up, not submitted again)."""
    pool = tmp_path / "pool.jsonl"
    problems = [{"pid": f"roots{i}", "answer": "5",
                 "problem": f"Find the sum of the real roots of $x^2-5x+6=0$. (Variant {i}.)"} for i in range(4)]
    pool.write_text("".join(json.dumps(p) + "\n" for p in problems))

    def teacher(messages: list[dict], body: dict) -> str:
        first = len([m for m in messages if m["role"] == "user"]) == 1
        odd = any(f"Variant {i}." in messages[1]["content"] for i in (1, 3))
        return json.dumps(BAD if first and odd else GOOD)

    with LoopbackServer(script=teacher, batch_delay=0.3, lost_create=lost_create) as server:
        result = runner.invoke(app, ["compile", str(pool), "--teacher", "openai/teacher", "--base-url",
                                     server.openai_base_url, "--no-independent-solve", "--store",
                                     str(tmp_path / "c.sqlite"), "--json", *FAST])
        summary = _summary(result)
        sizes = [len(b.rows) for b in server.batches.batches.values()]
    assert summary["compiled"] == 4 and summary["attempts_per_family"] == {"1": 2, "2": 2}
    assert sizes == [4, 2] and server.batches.creates == 2 and server.total == 0


def test_batch_mode_refuses_an_endpoint_without_a_batch_api(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "nobatch.sqlite"
    _import(store, release_data)
    local = runner.invoke(app, ["probe", "--student", "local", "--store", str(store), "--batch"])
    assert local.exit_code != 0 and "local has no batch API" in local.output
    with LoopbackServer() as server:
        other = runner.invoke(app, ["probe", "--student", "openai/m", "--store", str(store), "--batch",
                                    "--base-url", server.url + "/plain/v1"])
    assert other.exit_code == 1 and "has no batch API" in other.output
    assert len(other.output.strip().splitlines()) == 1


def test_a_batch_the_provider_no_longer_has_is_submitted_again(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "gone.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=60) as server:
        args = _probe_args("openai", server, store)
        _killed_after_submission([*args, *FAST], store, server)
        rows, port = server.batches.stats()["batch_rows"], server.port
    # the same endpoint, which has no such batch now (a provider that deleted it)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.3, port=port) as server:
        summary = _summary(runner.invoke(app, [*args, *FAST]))
        stats = server.stats()
    assert stats["batches"] == 1 and stats["batch_rows"] == rows and set(stats["batch_rows_by_id"].values()) == {1}
    assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == rows


async def test_progress_is_not_done_until_the_results_are_read(tmp_path: Path) -> None:
    """Each batch's state as the provider says it, polled at a growing interval; its rows count as
    done only once read (not while the provider is finalizing), and the batch is in the store."""
    views: list[tuple[str, int]] = []
    polls: list[float] = []
    async with LoopbackServer(batch_delay=1.5) as server:
        store = await Store.open(tmp_path / "p.sqlite")
        client = make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, quiet=0.1, poll=0.05)
        client.provider.on_status = lambda v: views.append((v.state, v.settled))
        status = client.provider.api.status

        async def timed(batch_id: str):  # type: ignore[no-untyped-def]
            polls.append(time.monotonic())
            return await status(batch_id)

        client.provider.api.status = timed
        results = await asyncio.gather(*(client.complete(client.request(f"q{i}", max_tokens=8)) for i in range(5)))
        stored = await store.batches()
        await client.aclose()
        await store.close()
    assert [r.text for r in results] == [f"echo: q{i}" for i in range(5)]
    states = [s for s, _ in views]
    assert states[:1] == ["submitted"] and {"validating", "in_progress", "finalizing", "completed"} <= set(states)
    assert all(settled == 0 for _, settled in views[:-1]) and views[-1] == ("completed", 5)
    gaps = [b - a for a, b in zip(polls, polls[1:])]
    assert gaps[-1] > 2 * gaps[0]  # the interval backs off
    assert [(b.state, b.requests, b.succeeded) for b in stored] == [("completed", 5, 5)]
    assert client.usage.successes == 5 and client.batch


@pytest.mark.parametrize("limit", ["requests", "bytes"])
async def test_batches_are_split_within_the_providers_limits(tmp_path: Path, limit: str) -> None:
    async with LoopbackServer(batch_delay=0.1) as server:
        store = await Store.open(tmp_path / "split.sqlite")
        client = make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, quiet=0.5, poll=0.05)
        requests = [client.request(f"q{i}", max_tokens=8) for i in range(7)]
        api = client.provider.api
        if limit == "requests":
            api.max_requests = 3
        else:  # room for two rows and a half
            api.max_bytes = len(json.dumps(api.entry(requests[0].key(), requests[0])).encode()) * 5 // 2
        results = await asyncio.gather(*(client.complete(r) for r in requests))
        await client.aclose()
        await store.close()
        sizes = [len(b.rows) for b in server.batches.batches.values()]
    assert [r.text for r in results] == [f"echo: q{i}" for i in range(7)]
    # every batch within the limit, none empty, each row once (how many rounds the 7 calls arrive in
    # is the machine's: a slow one may flush before the last of them is queued)
    most = 3 if limit == "requests" else 2
    assert sum(sizes) == 7 and all(1 <= n <= most for n in sizes) and most in sizes


async def test_a_round_waits_for_slow_checks_of_the_last(tmp_path: Path) -> None:
    """Each caller checks its answer for a while (up to 8x the quiet window, as validation on a loaded
    machine may) before its second call: the second calls still go out as one batch, not one per
    caller. A caller that never asks again (stuck) holds the round back no longer than ``hold``."""
    async with LoopbackServer(batch_delay=0.1) as server:
        store = await Store.open(tmp_path / "rounds.sqlite")
        client = make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, quiet=0.1, poll=0.05)

        async def family(i: int) -> str:
            first = await client.complete(client.request(f"first {i}", max_tokens=8))
            await asyncio.sleep(0.1 * 2 * i)  # the check of the answer
            second = await client.complete(client.request(f"again {i}", max_tokens=8))
            return first.text + " / " + second.text

        texts = await asyncio.gather(*(family(i) for i in range(5)))
        rounds = [len(b.rows) for b in server.batches.batches.values()]

        client.provider.hold = 1.0
        stuck = asyncio.Event()

        async def stalls() -> None:
            await client.complete(client.request("stalls", max_tokens=8))
            await stuck.wait()  # at work for ever after its answer

        async def goes_on() -> str:
            await client.complete(client.request("goes on", max_tokens=8))
            await asyncio.sleep(0.3)
            return (await client.complete(client.request("after", max_tokens=8))).text

        hung = asyncio.create_task(stalls())
        start = time.monotonic()
        after = await asyncio.wait_for(goes_on(), timeout=30)
        held = time.monotonic() - start
        hung.cancel()
        await client.aclose()
        await store.close()
    assert texts == [f"echo: first {i} / echo: again {i}" for i in range(5)]
    assert rounds == [5, 5]
    # the hold is honoured (the behaviour: at least its 1 s); a round stuck on the stalled call would
    # never end, and wait_for's 30 s says so
    assert after == "echo: after" and held >= 1.0


async def test_a_call_waiting_for_room_in_the_budget_does_not_hold_its_round_back(tmp_path: Path) -> None:
    """Two callers, each a first call then a second; the budget has room for two calls at their worst:
    the first calls go in one batch, then one second call, then (its reservation settled) the other.
    The caller waiting for room is not at work: its round goes out without it, not after ``hold``."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"date": "2026-01-01", "models": {"openai/m": {"input": 1000.0, "output": 1000.0}}}))
    table = load_prices(prices)
    async with LoopbackServer(batch_delay=0.1) as server:
        store = await Store.open(tmp_path / "budget.sqlite")
        unbounded = make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, prices=table)
        worst = unbounded.worst_cost(unbounded.request("again 0", max_tokens=8))  # each call's, all alike
        await unbounded.aclose()
        assert worst is not None
        client = make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, quiet=0.1, poll=0.05,
                                   prices=table, max_cost=2 * worst + 1e-6)  # two calls at their worst
        client.provider.hold = 600.0  # a round held back by the waiting caller would wait this long

        async def caller(i: int) -> str:
            await client.complete(client.request(f"first {i}", max_tokens=8))
            return (await client.complete(client.request(f"again {i}", max_tokens=8))).text

        # a limit far under the hold: a round held back never ends within it
        texts = await asyncio.wait_for(asyncio.gather(caller(0), caller(1)), timeout=60)
        await client.aclose()
        await store.close()
        rounds = [len(b.rows) for b in server.batches.batches.values()]
    assert texts == ["echo: again 0", "echo: again 1"] and rounds == [2, 1, 1]
    assert client.usage.cost_usd is not None and client.usage.cost_usd <= client.max_cost


async def test_batch_clients_sharing_a_round_state_wait_for_each_others_tasks(tmp_path: Path) -> None:
    """Two batch clients of one run (one ``Rounds``): each task checks the first client's answer a
    while, then asks the second; the second's calls still go out as one batch, not one per task."""
    async with LoopbackServer(batch_delay=0.1) as server:
        store = await Store.open(tmp_path / "shared.sqlite")
        shared = Rounds()
        first, second = (make_batch_client("openai/m", cache=store, base_url=server.openai_base_url, quiet=0.1,
                                           poll=0.05, round_state=shared) for _ in range(2))

        async def task(i: int) -> str:
            answer = await first.complete(first.request(f"first {i}", max_tokens=8))
            await asyncio.sleep(0.1 * 2 * i)  # the check of the answer
            return answer.text + " / " + (await second.complete(second.request(f"then {i}", max_tokens=8))).text

        texts = await asyncio.gather(*(task(i) for i in range(5)))
        for client in (first, second):
            await client.aclose()
        await store.close()
        sizes = [len(b.rows) for b in server.batches.batches.values()]
    assert texts == [f"echo: first {i} / echo: then {i}" for i in range(5)]
    assert sizes == [5, 5]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_rows_refusing_a_parameter_go_again_without_it(tmp_path: Path, release_data: Path, wire: str) -> None:
    """A newer model refuses max_tokens (OpenAI's reasoning models) or temperature (Anthropic's newest)
    with a 400 per row: learned from the rows, the next batch goes without it, as online calls do."""
    store = tmp_path / "refusing.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, refusing_models=("newest",)) as server:
        args = _probe_args(wire, server, store)
        args[args.index(f"{wire}/student")] = f"{wire}/newest"
        summary = _summary(runner.invoke(app, [*args, *FAST]))
        batches = list(server.batches.batches.values())
    refused = "max_tokens" if wire == "openai" else "temperature"
    assert len(batches) == 2 and len(batches[0].rows) == len(batches[1].rows)
    assert all(refused in body for _, body in batches[0].rows)
    assert not any(refused in body for _, body in batches[1].rows)
    assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(batches[1].rows)


def _ended(wire: str) -> str:
    """The first batch's row in the store once it ended, as each provider names them."""
    return "batch_loop0 completed" if wire == "openai" else "msgbatch_loop0 ended"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", LOST_CREATES)
def test_a_batch_whose_create_reply_is_lost_is_looked_up_not_submitted_again(tmp_path: Path, release_data: Path,
                                                                            wire: str, fault: str) -> None:
    """The provider makes the batch, then drops the connection, answers 500 or stalls past the client's
    timeout: the batch is found in the provider's list and read; nothing is submitted twice."""
    store = tmp_path / "lost.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.3, lost_create=fault) as server:
        summary = _summary(runner.invoke(app, [*_probe_args(wire, server, store), *FAST, "--timeout", "3"]))
        stats = server.stats()
    assert server.batches.creates == 1 and stats["batches"] == 1
    assert set(stats["batch_rows_by_id"].values()) == {1}  # 0 requests submitted twice
    assert summary["failed_jobs"] == [] and summary["successes"] == stats["batch_rows"] > 0
    assert summary["batch_rows_submitted"] == stats["batch_rows"]
    assert _count(store, "SELECT COUNT(*) FROM rollouts") == stats["batch_rows"]
    # stored under the provider's id, no intent left
    assert _count(store, "SELECT group_concat(id || ' ' || state) FROM batches") == _ended(wire)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_run_killed_before_its_batch_id_is_stored_finds_the_batch_on_resume(tmp_path: Path, release_data: Path,
                                                                             wire: str) -> None:
    """Killed while the provider has made the batch but not yet answered the create: the rerun finds
    the batch of the stored intent and reads it, submitting nothing."""
    store = tmp_path / "intent.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=60, lost_create="stall") as server:
        args = _probe_args(wire, server, store)
        _killed_after_submission([*args, *FAST], store, server, ready=lambda: server.batches.created == 1)
        rows = server.batches.stats()["batch_rows"]
        assert rows > 0 and _count(store, "SELECT state || ' ' || requests FROM batches") == f"creating {rows}"
        listed = runner.invoke(app, ["batches", "--store", str(store), "--cancel"])  # no id to cancel yet
        assert listed.exit_code == 0 and "cancelled 0" in listed.output and ": creating;" in listed.output
        server.batches.delay = 1.0  # the provider finishes it while the resumed run polls

        summary = _summary(runner.invoke(app, [*args, *FAST]))
        stats = server.stats()
    assert server.batches.creates == 1 and stats["batches"] == 1 and stats["batch_rows"] == rows
    assert set(stats["batch_rows_by_id"].values()) == {1}  # 0 requests submitted twice
    assert summary["failed_jobs"] == [] and summary["successes"] == rows and summary["batch_rows_submitted"] == 0
    assert _count(store, "SELECT COUNT(*) FROM rollouts") == rows
    assert _count(store, "SELECT group_concat(id || ' ' || state) FROM batches") == _ended(wire)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", NOT_CREATED)
async def test_a_create_that_made_no_batch_is_submitted_again_or_fails(tmp_path: Path, wire: str, fault: str) -> None:
    """A 5xx that made no batch: not in the provider's list once it is consistent (``list_lag``), its
    calls go in the next batch, once. A 4xx made none for sure: the calls fail at once, no lookup."""
    async with LoopbackServer(batch_delay=0.1, lost_create=fault) as server:
        store = await Store.open(tmp_path / "none.sqlite")
        url = server.openai_base_url if wire == "openai" else server.anthropic_base_url
        client = make_batch_client(f"{wire}/m", cache=store, base_url=url, quiet=0.1, poll=0.05)
        client.provider.api.list_lag = 1.0 if fault == "500-none" else 60.0
        start = time.monotonic()
        results = await asyncio.gather(*(client.complete(client.request(f"q{i}", max_tokens=8)) for i in range(3)),
                                       return_exceptions=True)
        took = time.monotonic() - start
        stored = [(b.id, b.state) for b in await store.batches()]
        await client.aclose()
        await store.close()
    assert server.batches.creates == 1 + (fault == "500-none")
    if fault == "500-none":
        assert [getattr(r, "text", r) for r in results] == [f"echo: q{i}" for i in range(3)]
        # the behaviour, not a speed: the lookup waited out the list's 1 s lag before submitting again
        assert took >= 1.0 and set(server.batches.rows_by_id.values()) == {1}
        assert [" ".join(b) for b in stored] == [_ended(wire)]  # the intent of the first create forgotten
    else:
        assert all(isinstance(r, BadRequestError) and r.status == 400 for r in results)
        # the behaviour, not a speed: failed at once, without the 60 s lookup a lost create waits for
        assert took < 30 and server.batches.created == 0 and stored == []
