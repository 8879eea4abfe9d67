"""Structured outputs against the loopback server: the JSON schema reaches the server exactly once
per request in every mode (also in the caller's re-ask), and one structured call is one model call,
an invalid reply raising one typed error that carries what a caller needs to ask again."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from oracleladder.clients import ChatRequest, ConfigurationError, MemoryCache, StructuredOutputError, make_client
from oracleladder.testing import LoopbackServer

MARK = "unit-of-length-7f3a"  # in the schema only: where it shows in a body, the schema is


class Distance(BaseModel):
    value: int
    unit: str = Field(description=f"the {MARK}")


def again(error: StructuredOutputError) -> ChatRequest:
    """The caller's re-ask (the compile loop's): its request, the reply and what is wrong with it."""
    return error.request.model_copy(update={"messages": [*error.request.messages, *error.reask()]})


@pytest.mark.parametrize("provider,mode", [("openai", "json_schema"), ("openai", "json_object"),
                                           ("openai", "tools"), ("openai", "md_json"), ("anthropic", "auto")])
async def test_the_schema_is_sent_exactly_once_per_request(provider: str, mode: str) -> None:
    """The body as the server received it, for the first ask and for the re-ask after a reply that
    is not valid: the schema in it once (its one owner per mode), the reply parsed."""
    bodies: list[dict] = []
    replies = iter(['{"value": "far"}', '```json\n{"value": 3, "unit": "m"}\n```'])

    def script(messages, body):
        bodies.append(body)
        return next(replies)

    async with LoopbackServer(script) as srv:
        url = srv.openai_base_url if provider == "openai" else srv.anthropic_base_url
        c = make_client(f"{provider}/m", base_url=url, api_key="k", structured=mode)
        request = c.request([{"role": "system", "content": "You measure."}, {"role": "user", "content": "How far?"}])
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(request, Distance)
        out = await c.structured(again(info.value), Distance)
        await c.aclose()
    assert out == Distance(value=3, unit="m") and len(bodies) == 2
    for body in bodies:
        assert json.dumps(body).count(MARK) == 1, body
    reask = bodies[1]["messages"][-2:]
    assert reask[0] == {"role": "assistant", "content": '{"value": "far"}'}
    assert "value" in reask[1]["content"] and "unit" in reask[1]["content"] and MARK not in reask[1]["content"]


async def test_one_call_and_a_typed_error() -> None:
    async with LoopbackServer(['{"value": "three", "unit": "m"}', '{"value": 3, "unit": "m"}']) as srv:
        cache = MemoryCache()
        c = make_client("openai/m", base_url=srv.openai_base_url, cache=cache)
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(c.request("How far?"), Distance)
        assert srv.total == 1
        error = info.value
        assert error.raw == '{"value": "three", "unit": "m"}' and error.attempts == 1 and not error.truncated
        assert [e["loc"] for e in error.errors] == [("value",)] and "value: Input should be a valid integer" in str(error)
        assert (error.tokens_in, error.tokens_out) == (c.usage.tokens_in, c.usage.tokens_out) and error.tokens_out > 0
        assert error.request.messages == [{"role": "user", "content": "How far?"}]  # as asked, without the mode's part
        assert (await c.structured(again(error), Distance)).value == 3 and srv.total == 2
        await c.aclose()
    assert len(cache.results) == 2  # both replies stored, the invalid one too: a rerun pays for neither


async def test_a_reply_with_no_json_is_one_error_for_the_whole_reply() -> None:
    async with LoopbackServer(["I would rather not."]) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url)
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(c.request("How far?"), Distance)
        await c.aclose()
        assert srv.total == 1
    error = info.value
    assert [(e["type"], e["loc"]) for e in error.errors] == [("json_invalid", ())]
    assert error.describe().startswith("(whole reply): Invalid JSON") and error.raw == "I would rather not."


async def test_a_reply_cut_off_by_its_budget_says_so() -> None:
    async with LoopbackServer(['{"value": 3, "un'], finish_reason="length") as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url)
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(c.request("How far?", max_tokens=8), Distance)
        await c.aclose()
        assert srv.total == 1
    assert info.value.truncated and "cut off by its token budget" in str(info.value)


def test_a_mode_whose_schema_the_wire_would_drop_is_refused() -> None:
    """Anthropic's wire has no response_format nor OpenAI tools: a schema sent there would be sent
    zero times, so only md_json (or auto) is taken."""
    with pytest.raises(ConfigurationError, match="md_json"):
        make_client("anthropic/m", base_url="http://127.0.0.1:9", api_key="k", structured="json_schema")
    with pytest.raises(ConfigurationError, match="unknown structured mode"):
        make_client("openai/m", base_url="http://127.0.0.1:9", structured="xml")
