"""A Python function as a model's wire (clients.function) under the real Client: what it returns is
an answer only when it is text; what it raises is mapped as a provider's error is (clients.errors):
a timeout or a dropped connection retried, anything else a failed call, stored as one."""

from __future__ import annotations

import pytest

from oracleladder.clients import ConfigurationError, MemoryCache, RateLimitError, make_client
from oracleladder.clients.errors import FunctionFailed


def _client(function, cache: MemoryCache | None = None):
    return make_client("python/fn", function=function, cache=cache, backoff_base=0.01, max_attempts=3)


async def test_a_timeout_or_a_dropped_connection_is_retried_and_the_answer_cached() -> None:
    raised = [TimeoutError("slow"), ConnectionResetError("reset"), RateLimitError("busy", retry_after=0.01)]

    async def fn(messages: list[dict], params: dict) -> tuple[str, dict[str, int]]:
        if raised:
            raise raised.pop(0)
        return "42", {"tokens_in": 7, "tokens_out": 1}

    cache = MemoryCache()
    async with make_client("python/fn", function=fn, cache=cache, backoff_base=0.01, max_attempts=4) as client:
        request = client.request("6 times 7?")
        result = await client.complete(request)
        assert (result.text, result.tokens_in, result.tokens_out, result.metered) == ("42", 7, 1, True)
        assert (client.usage.retries, client.usage.timeouts, client.usage.rate_limited) == (3, 1, 1)
        assert (await client.complete(request)).text == "42" and client.usage.requests == 4
    assert request.key() in cache.results and request.provider == "python" and request.model == "fn"


@pytest.mark.parametrize("reply, why", [
    (None, "returned NoneType, not its text"),
    (("text", {"tokens": 3}), "returned tuple, not its text"),
    (ValueError("bad prompt"), "raised ValueError: bad prompt"),
])
async def test_anything_but_text_is_a_failed_call_stored_as_one_and_not_retried(reply, why: str) -> None:
    calls = []

    def fn(messages: list[dict], params: dict):
        calls.append(messages)
        if isinstance(reply, Exception):
            raise reply
        return reply

    cache = MemoryCache()
    async with _client(fn, cache) as client:
        request = client.request("hello")
        with pytest.raises(FunctionFailed, match=f"python/fn {why}"):
            await client.complete(request)
        assert client.usage.failures == 1 and client.usage.successes == 0
    assert len(calls) == 1 and request.key() in cache.errors and request.key() not in cache.results


async def test_the_function_gets_copies_so_the_stored_request_is_the_one_asked() -> None:
    def fn(messages: list[dict], params: dict) -> str:
        messages.append({"role": "user", "content": "injected"})
        params["temperature"] = 9
        return "ok"

    async with _client(fn) as client:
        request = client.request("hello", temperature=0.0)
        key = request.key()
        await client.complete(request)
    assert request.key() == key and request.params == {"temperature": 0.0}


def test_a_function_that_cannot_take_messages_and_params_or_no_function_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"a model function takes \(messages, params\); '<lambda>' does not"):
        _client(lambda messages: "x")
    with pytest.raises(ConfigurationError, match="a python/ model is a Python function"):
        make_client("python/fn")
