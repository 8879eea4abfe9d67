"""Structured outputs against the loopback server: in every provider's every mode the body sent is
the one instructor's handler builds for it, the JSON schema in it exactly once (also in the re-ask,
in the mode's own shape), and one structured call is one model call, an invalid reply raising one
typed error that carries what a caller needs to ask again."""

from __future__ import annotations

import copy
import importlib
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


# each provider's modes, and instructor's provider and mode for each
CASES = [("openai", "json_schema", "JSON_SCHEMA"), ("openai", "json_object", "JSON"), ("openai", "tools", "TOOLS"),
         ("openai", "md_json", "MD_JSON"), ("anthropic", "tools", "TOOLS"), ("anthropic", "md_json", "JSON")]


def instructors(provider: str, mode: str, messages: list[dict], **params: object) -> dict:
    """The body instructor's handler builds for ``mode`` (as JSON reads it back)."""
    # instructor imported here, not at the top: it loads both SDKs' types, two seconds of CPU that each
    # pytest-xdist worker's collection paid, where only this file's loopback tests use it
    instructor = importlib.import_module("instructor")
    response = importlib.import_module("instructor.processing.response")
    _, body = response.handle_response_model(Distance, mode=instructor.Mode[mode],
                                             provider=instructor.Provider[provider.upper()],
                                             messages=copy.deepcopy(messages), **params)
    return json.loads(json.dumps(body))


# Anthropic's wire is its SDK's; an OpenAI-compatible server's is the SDK's or our aiohttp one
@pytest.mark.parametrize("provider,mode,instructor_mode,transport",
                         [(*case, t) for case in CASES for t in (("sdk", "aiohttp") if case[0] == "openai" else ("sdk",))])
async def test_the_body_sent_is_the_one_instructor_builds(provider: str, mode: str, instructor_mode: str,
                                                          transport: str) -> None:
    """The body as the server received it (through the provider SDK's own request path, or our aiohttp
    one for an OpenAI-compatible server) is the one instructor's handler builds for the mode, for the
    first ask and for the re-ask after a reply that is not valid (the re-ask's messages in the mode's
    own shape); the schema in it once; the reply parsed."""
    bodies: list[dict] = []
    replies = iter(['{"value": "far"}', '```json\n{"value": 3, "unit": "m"}\n```'])

    def script(messages, body):
        bodies.append(body)
        return next(replies)

    async with LoopbackServer(script) as srv:
        url = srv.openai_base_url if provider == "openai" else srv.anthropic_base_url
        c = make_client(f"{provider}/m", base_url=url, api_key="k", structured=mode, transport=transport)
        request = c.request([{"role": "system", "content": "You measure."}, {"role": "user", "content": "How far?"}],
                            temperature=0.0, max_tokens=64)
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(request, Distance)
        reask = info.value.reask()
        out = await c.structured(request.model_copy(update={"messages": [*request.messages, *reask]}), Distance)
        await c.aclose()
    assert out == Distance(value=3, unit="m") and len(bodies) == 2
    params = {"model": "m", "max_tokens": 64, "temperature": 0.0}
    assert bodies[0] == instructors(provider, instructor_mode, request.messages, **params)
    assert bodies[1] == instructors(provider, instructor_mode, [*request.messages, *reask], **params)
    for body in bodies:
        assert json.dumps(body).count(MARK) == 1, body
    if mode == "tools":  # the reply was the forced call's: the re-ask answers it with the errors
        assert "tool_call" in json.dumps(reask) or "tool_result" in json.dumps(reask)
    assert "value: Input should be a valid integer" in json.dumps(reask) and MARK not in json.dumps(reask)


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


def test_a_mode_the_provider_has_not_is_refused() -> None:
    """Anthropic's wire has no response_format: its modes are tools (a forced tool_use) and md_json."""
    with pytest.raises(ConfigurationError, match="anthropic takes structured mode tools, md_json"):
        make_client("anthropic/m", base_url="http://127.0.0.1:9", api_key="k", structured="json_schema")
    with pytest.raises(ConfigurationError, match="unknown structured mode"):
        make_client("openai/m", base_url="http://127.0.0.1:9", structured="xml")
