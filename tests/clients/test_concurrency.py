"""The calls in flight to one endpoint (limits.Concurrency): additive increase while calls are
answered, halved once per burst of timeouts or 429s, said once; an unknown server started small."""
from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from oracleladder.clients import make_client
from oracleladder.clients.limits import Concurrency
from oracleladder.clients.providers import Capacity, server_capacity
from oracleladder.testing import Faults, LoopbackServer


async def test_grows_by_one_per_window_answered_and_halves_once_per_burst(caplog: pytest.LogCaptureFixture) -> None:
    c = Concurrency(8, 2, "http://srv/v1")
    for _ in range(2):
        c.answered()
    assert c.limit == 3  # a window of 2 answered: one more
    for _ in range(3):
        c.answered()
    assert c.limit == 4
    epochs = [await c.acquire() for _ in range(4)]
    assert not c.free()
    for epoch in epochs:  # the four calls of one burst time out together: halved once
        c.overloaded(epoch, "request timed out after 1 s")
    assert c.limit == 2 and c.inflight == 4
    c.release()
    c.release()
    assert not c.free()  # four were in flight: none is sent until fewer than two are
    c.release()
    assert c.free()
    c.overloaded(await c.acquire(), "HTTP 429")  # sent after the decrease: a new overload
    assert c.limit == 1
    notes = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert notes == ["http://srv/v1: request timed out after 1 s with 4 calls in flight: concurrency lowered to 2 "
                     "(it grows back by one while calls are answered; said once; --timeout S gives each call longer)"]


def test_never_above_its_ceiling() -> None:
    c = Concurrency(3, 5)
    assert c.limit == 3
    for _ in range(10):
        c.answered()
    assert c.limit == 3


async def test_a_client_started_small_grows_and_lowers_at_429s(caplog: pytest.LogCaptureFixture) -> None:
    async with LoopbackServer(latency=0.02) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, concurrency=6, start_concurrency=2)
        await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(60)))
        await c.aclose()
    assert 2 < srv.max_inflight <= 6  # started at 2, grew, never past its ceiling
    async with LoopbackServer(latency=0.02, faults=Faults(fail_first=4, retry_after=0.01)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, concurrency=4, backoff_base=0.01)
        try:
            await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(4)))
        finally:
            await c.aclose()
    lowered = [r.getMessage() for r in caplog.records if "concurrency lowered" in r.getMessage()]
    assert len(lowered) == 1 and "HTTP 429" in lowered[0] and "with 4 calls in flight: concurrency lowered to 2" \
        in lowered[0]  # the four first answered 429 together: halved once


async def _serving(routes: dict[str, object]) -> tuple[web.AppRunner, str]:
    """A server answering GET at each path of ``routes`` with its JSON (what SGLang and vLLM say there)."""
    async def answer(request: web.Request) -> web.Response:
        return web.json_response(routes[request.path])

    app = web.Application()
    for path in routes:
        app.router.add_get(path, answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"


@pytest.mark.parametrize("routes,said", [
    ({"/get_server_info": {"max_running_requests": 48}}, Capacity(48, "SGLang's /get_server_info")),
    ({"/get_server_info": {"internal_states": [{"max_running_requests": 12}]}},
     Capacity(12, "SGLang's /get_server_info")),
    ({"/v1/models": {"data": [{"id": "m", "owned_by": "vllm"}]}}, Capacity(None, "vLLM, by its /v1/models")),
    ({"/openapi.json": {"info": {"title": "🦙 llama.cpp Python API"}}},
     Capacity(1, "llama-cpp-python's server, by its /openapi.json")),
    ({"/v1/models": {"data": [{"id": "m", "owned_by": "ollama"}]}}, None),
])
async def test_what_a_server_says_of_its_capacity(routes: dict[str, object], said: Capacity | None) -> None:
    runner, url = await _serving(routes)
    try:
        assert await server_capacity(url) == said
    finally:
        await runner.cleanup()
    assert await server_capacity(url) is None  # nothing listens any more
