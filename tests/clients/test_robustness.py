"""The client layer under an unlucky server: empty completions, long Retry-After, hung requests,
keys echoed in error bodies, small servers, replicas. Everything against the real loopback server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import AuthenticationError, EmptyCompletion, make_client
from oracleladder.clients.errors import scrub
from oracleladder.clients.providers import Capacity, server_capacity
from oracleladder.store import Store
from oracleladder.testing import Faults, LoopbackServer
from tests.helpers import REPO

WIRES = [("openai/m", "sdk"), ("openai/m", "aiohttp"), ("anthropic/m", "auto")]


def _url(srv: LoopbackServer, model: str) -> str:
    return srv.anthropic_base_url if model.startswith("anthropic") else srv.openai_base_url


@pytest.mark.parametrize("model,transport", WIRES)
@pytest.mark.parametrize("empty", ["", None, "  \n"])
async def test_empty_completion_is_retried(model, transport, empty):
    async with LoopbackServer([empty, empty, "the answer"]) as srv:
        c = make_client(model, base_url=_url(srv, model), api_key="k", transport=transport, backoff_base=0.01)
        r = await c.complete(c.request("q"))
        await c.aclose()
        assert srv.total == 3
    assert r.text == "the answer" and c.usage.retries == 2


@pytest.mark.parametrize("model,transport", WIRES)
async def test_persistent_empty_completion_is_a_failed_call_never_a_cached_answer(tmp_path, model, transport):
    store = await Store.open(tmp_path / "s.sqlite")
    try:
        async with LoopbackServer(lambda messages, body: None) as srv:
            for run in (1, 2):  # a rerun asks again: nothing was cached
                c = make_client(model, base_url=_url(srv, model), api_key="k", transport=transport,
                                cache=store, max_attempts=3, backoff_base=0.01)
                req = c.request("q")
                with pytest.raises(EmptyCompletion, match="empty completion.*gave up after 3 attempts"):
                    await c.complete(req)
                await c.aclose()
                assert srv.total == 3 * run
        assert await store.get_call(req.key()) is None
        record = await store.get_call_record(req.key())
        assert record is not None and record.result is None
        assert record.error is not None and record.error.startswith("EmptyCompletion: ")
    finally:
        await store.close()


@pytest.mark.parametrize("model,transport", WIRES)
async def test_empty_text_cut_off_by_the_budget_is_an_answer(model, transport):
    # a reasoning model that spent max_tokens thinking: a truncation, not an outage
    async with LoopbackServer([""], finish_reason="length") as srv:
        c = make_client(model, base_url=_url(srv, model), api_key="k", transport=transport)
        r = await c.complete(c.request("q", max_tokens=5))
        await c.aclose()
        assert srv.total == 1
    assert r.text == "" and r.finish_reason in ("length", "max_tokens")


async def test_long_retry_after_is_capped_and_said_once(caplog):
    # one 429 asking for an hour must not stop every worker for an hour
    async with LoopbackServer(faults=Faults(fail_first=2, retry_after=3600)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, concurrency=4, max_cooldown=0.3)
        t0 = time.monotonic()
        results = await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(8)))
        elapsed = time.monotonic() - t0
        await c.aclose()
    assert [r.text for r in results] == [f"echo: q{i}" for i in range(8)]
    assert c.usage.rate_limited == 2 and elapsed < 60  # the behaviour, not a speed: capped, not the hour asked
    warnings = [r.getMessage() for r in caplog.records if "Retry-After" in r.getMessage()]
    assert len(warnings) == 1 and "3600 s" in warnings[0] and "at most 0.3 s" in warnings[0]


@pytest.mark.parametrize("transport", ["sdk", "aiohttp"])
async def test_timeouts_are_said_once_then_counted(caplog, transport):
    async with LoopbackServer(faults=Faults(fail_first=3, fail_first_kind="hang", hang_s=5)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, timeout=0.3, backoff_base=0.01,
                        concurrency=3, transport=transport)
        results = await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(3)))
        await c.aclose()
    assert len(results) == 3 and c.usage.timeouts == 3
    notes = [r.getMessage() for r in caplog.records if "timed out" in r.getMessage()]
    # the three calls of one burst lower it once
    assert len(notes) == 1 and "with 3 calls in flight: concurrency lowered to 1" in notes[0], notes
    assert "--timeout" in notes[0]


def test_cli_timeout_and_max_cooldown(sample_store: Path, caplog):
    store = str(sample_store)
    with LoopbackServer(faults=Faults(fail_first=2, fail_first_kind="hang", hang_s=5)) as srv:
        result = CliRunner().invoke(app, [
            "probe", "--student", "openai/s", "--base-url", srv.openai_base_url, "--store", store,
            "--limit", "2", "--k", "1", "--no-stage0", "--conditions", "C1_direct", "--concurrency", "2",
            "--timeout", "0.5", "--max-cooldown", "0.2"])
    assert result.exit_code == 0, result.output
    notes = [r.getMessage() for r in caplog.records if "concurrency lowered" in r.getMessage()]
    assert len(notes) == 1 and "timed out after 0.5 s with 2 calls in flight: concurrency lowered to 1" in notes[0]
    assert "2 request(s) timed out" in result.output


SECRET = "gatewaySECRETkey"  # not key-shaped: found only because it is the key in use


@pytest.mark.parametrize("model,transport", WIRES)
async def test_key_echoed_in_a_401_reaches_neither_store_nor_stderr(tmp_path, capfd, model, transport):
    path = tmp_path / "s.sqlite"
    store = await Store.open(path)
    try:
        async with LoopbackServer(api_key="the-right-one", echo_key=True) as srv:
            c = make_client(model, base_url=_url(srv, model), api_key=SECRET, transport=transport, cache=store)
            with pytest.raises(AuthenticationError) as ei:
                await c.complete(c.request("q"))
            await c.aclose()
        record = await store.get_call_record(c.request("q").key())
    finally:
        await store.close()
    assert record is not None and record.error is not None and "invalid api key" in record.error
    assert SECRET not in record.error and SECRET not in str(ei.value)
    assert "[REDACTED]" in record.error
    print(ei.getrepr())  # what a traceback would show
    assert SECRET not in capfd.readouterr().err + capfd.readouterr().out
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_cli_error_never_prints_the_key(tmp_path: Path, sample_store: Path):
    store = str(sample_store)
    # the key is named for this endpoint, so it is sent (and echoed back in the 401 body)
    env = {**os.environ, "MYKEY": SECRET, "PYTHONPATH": str(REPO)}
    with LoopbackServer(api_key="the-right-one", echo_key=True) as srv:
        run = subprocess.run([sys.executable, "-m", "oracleladder.cli", "probe", "--student", "openai/s",
                              "--base-url", srv.openai_base_url, "--api-key-env", "MYKEY", "--store", store,
                              "--limit", "2", "--k", "1"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert srv.by_kind["401"] >= 1 and SECRET in " ".join(c or "" for c in srv.credentials)
    assert run.returncode == 1 and "refused the key in MYKEY (HTTP 401)" in run.stdout + run.stderr
    assert SECRET not in run.stdout + run.stderr
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_scrub_removes_keys_of_every_known_variable_and_key_shapes(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropicENVvalue")
    text = ("bad key anthropicENVvalue; Authorization: Bearer abc.def-ghi; sk-proj-AbC123xyz_456; "
            "sk-ant-api03-ZZZZzzzz; token a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6; model gpt-4o-mini")
    out = scrub(text)
    for secret in ("anthropicENVvalue", "abc.def-ghi", "sk-proj-AbC123xyz_456", "sk-ant-api03-ZZZZzzzz",
                   "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6"):
        assert secret not in out
    assert out.startswith("bad key [REDACTED]") and out.endswith("model gpt-4o-mini")


def test_concurrency_default_is_the_servers_slot_count(sample_store: Path):
    store = str(sample_store)
    with LoopbackServer(slots=1, latency=0.05) as srv:
        result = CliRunner().invoke(app, [
            "probe", "--student", "openai/s", "--base-url", srv.openai_base_url, "--store", store,
            "--limit", "3", "--k", "3", "--no-stage0", "--conditions", "C1_direct"])  # the first family is skipped
        assert result.exit_code == 0, result.output
        assert srv.total == 6 and srv.max_inflight == 1  # one slot: never two requests at once
    assert "runs 1 request(s) at once" in result.output and "--concurrency 1" in result.output


async def test_server_capacity_unknown_when_the_server_does_not_say():
    async with LoopbackServer(slots=4) as srv:
        assert await server_capacity(srv.openai_base_url) == Capacity(4, "llama.cpp's /props")
    async with LoopbackServer() as srv:
        assert await server_capacity(srv.openai_base_url) is None


@pytest.mark.parametrize("kind", ["500", "drop"])
async def test_replicas_one_fails_half_way_every_call_completes_once(kind, caplog):
    n = 60
    async with LoopbackServer(latency=0.01) as a, \
            LoopbackServer(latency=0.01, faults=Faults(fail_after=12, fail_after_kind=kind)) as b:
        c = make_client("openai/m", base_url=[a.openai_base_url, b.openai_base_url], concurrency=3,
                        backoff_base=0.01, max_cooldown=60)
        assert c.concurrency == 6
        results = await asyncio.gather(*(c.complete(c.request(f"item {i}")) for i in range(n)))
        await c.aclose()
    assert [r.text for r in results] == [f"echo: item {i}" for i in range(n)]
    answered = a.ok_by_prompt + b.ok_by_prompt
    assert sorted(answered) == sorted(f"item {i}" for i in range(n)) and set(answered.values()) == {1}
    assert sum(b.ok_by_prompt.values()) == 12 and sum(a.ok_by_prompt.values()) == n - 12  # split
    assert 1 <= b.faulted <= 6  # cooled down after its failure: a retry now and then, not every call
    assert a.max_inflight <= 3 and b.max_inflight <= 3  # each replica's own concurrency
    assert sum("cooled down" in r.getMessage() for r in caplog.records) == 1


def test_cli_base_url_repeated_spreads_calls_over_replicas(sample_store: Path):
    store = str(sample_store)
    with LoopbackServer(latency=0.02) as a, LoopbackServer(latency=0.02) as b:
        result = CliRunner().invoke(app, [
            "probe", "--student", "openai/s", "--base-url", a.openai_base_url, "--base-url", b.openai_base_url,
            "--store", store, "--limit", "3", "--k", "4", "--no-stage0", "--conditions", "C1_direct",  # 1st skipped
            "--concurrency", "2"])
        assert result.exit_code == 0, result.output
        assert a.total + b.total == 8 and a.total >= 2 and b.total >= 2
        assert a.max_inflight <= 2 and b.max_inflight <= 2


async def test_a_429_pauses_only_the_replica_that_sent_it():
    async with LoopbackServer(latency=0.01) as a, \
            LoopbackServer(latency=0.01, faults=Faults(fail_first=1, retry_after=30)) as b:
        c = make_client("openai/m", base_url=[b.openai_base_url, a.openai_base_url], concurrency=2,
                        backoff_base=0.01, max_cooldown=60)
        t0 = time.monotonic()
        results = await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(20)))
        elapsed = time.monotonic() - t0
        await c.aclose()
    assert len(results) == 20 and c.usage.rate_limited == 1
    assert b.total - b.faulted <= 2 and sum(a.ok_by_prompt.values()) >= 18  # b rests 30 s, a answers
    assert elapsed < 25  # the behaviour, not a speed: not the 30 s the 429 asked of b
