"""The client layer under an unlucky server: empty completions, long Retry-After, hung requests,
keys echoed in error bodies, small servers, replicas. Everything against the real loopback server."""

from __future__ import annotations

import pytest

from oracleladder.clients import EmptyCompletion, ProviderError, make_client
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

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
    assert not isinstance(r, ProviderError)
