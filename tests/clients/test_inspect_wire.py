"""inspect_ai's models as a wire (clients.inspect_api) under the real Client, with inspect_ai's own
mockllm/model scripted: the answer and inspect_ai's usage, a failure inspect_ai's provider would not
retry a failed call stored as one (never an answer), a timeout retried, a parameter inspect_ai has no
field for refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from oracleladder.clients import BadRequestError, MemoryCache, PermanentError, make_client
from oracleladder.clients.inspect_api import InspectProvider
from tests.helpers.inspecting import inspect_module

if TYPE_CHECKING:
    from inspect_ai.model import ModelOutput


def _client(replies: list[Any], seen: list[Any], cache: MemoryCache):
    model = inspect_module("inspect_ai.model")

    def script(input: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        seen.append(([(m.role, m.text) for m in input], config.temperature, config.max_tokens, config.max_retries))
        reply = replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        output = model.ModelOutput.from_content(model="mockllm", content=reply)
        output.usage = model.ModelUsage(input_tokens=9, output_tokens=2, total_tokens=11)
        return output

    provider = InspectProvider("mockllm/model", model_args={"custom_outputs": script})
    return make_client("inspect/mockllm/model", providers=[provider], cache=cache, backoff_base=0.01, max_attempts=3)


async def test_an_answer_its_usage_and_a_timeout_retried() -> None:
    seen: list[Any] = []
    cache = MemoryCache()
    async with _client([TimeoutError("slow"), r"\boxed{4}"], seen, cache) as client:
        request = client.request([{"role": "system", "content": "Box it."}, {"role": "user", "content": "2+2?"}],
                                 temperature=0.5, max_tokens=64)
        result = await client.complete(request)
        assert (result.text, result.tokens_in, result.tokens_out, result.metered) == (r"\boxed{4}", 9, 2, True)
        assert (client.usage.retries, client.usage.timeouts) == (1, 1)
        assert (await client.complete(request)).text == r"\boxed{4}" and client.usage.requests == 2
    # inspect_ai's own retries off: the toolkit's are the ones that count
    assert seen[-1] == ([("system", "Box it."), ("user", "2+2?")], 0.5, 64, 0) and len(seen) == 2
    assert (request.provider, request.model) == ("inspect", "mockllm/model") and request.key() in cache.results


async def test_a_failure_inspect_would_not_retry_is_a_failed_call_and_an_unknown_parameter_is_refused() -> None:
    seen: list[Any] = []
    cache = MemoryCache()
    async with _client([ValueError("no such weights")], seen, cache) as client:
        request = client.request("hello")
        with pytest.raises(PermanentError, match="inspect/mockllm/model raised ValueError: no such weights"):
            await client.complete(request)
        with pytest.raises(BadRequestError, match="GenerateConfig has no parameter 'bogus'"):
            await client.complete(client.request("hello", bogus=1))
    assert len(seen) == 1 and request.key() in cache.errors and request.key() not in cache.results
