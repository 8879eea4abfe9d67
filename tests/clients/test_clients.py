"""The client layer: its cache, retries, limits and structured re-asks over a scripted in-process
provider, and the OpenAI and Anthropic wire formats against a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pydantic import BaseModel

from oracleladder.clients import (
    AuthenticationError,
    BadRequestError,
    ChatRequest,
    Client,
    MemoryCache,
    MissingAPIKey,
    RateLimitError,
    StructuredOutputError,
    UnknownProvider,
    make_client,
    make_provider,
    parse_model,
)
from oracleladder.clients.errors import ServerError
from oracleladder.testing import FakeProvider, Faults, LoopbackServer


def test_parse_model():
    assert parse_model("openai/gpt-5.4") == ("openai", "gpt-5.4")
    assert parse_model("anthropic/claude-haiku-4-5") == ("anthropic", "claude-haiku-4-5")
    assert parse_model("openai/meta-llama/Llama-3.1-8B") == ("openai", "meta-llama/Llama-3.1-8B")
    assert parse_model("local")[0] == "local" and parse_model("local")[1]
    assert parse_model("local/foo") == ("local", "foo")


def test_unknown_provider_lists_known():
    with pytest.raises(UnknownProvider) as ei:
        parse_model("mistral/large")
    msg = str(ei.value)
    for p in ("openai", "anthropic", "local"):
        assert p in msg


@pytest.mark.parametrize("provider,env", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_missing_key_names_variable(monkeypatch, provider, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingAPIKey) as ei:
        make_provider(provider)
    assert env in str(ei.value)


def test_openai_compatible_key_optional(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    make_provider("openai", base_url="http://127.0.0.1:9/v1")  # no error


@pytest.mark.parametrize("transport", ["sdk", "aiohttp"])
async def test_openai_round_trip(transport):
    async with LoopbackServer({"capital": "Paris"}) as srv:
        c = make_client("openai/gpt-4o-mini", base_url=srv.openai_base_url, api_key="sk-test",
                        transport=transport)
        r = await c.complete(c.request("What is the capital of France?", temperature=0))
        await c.aclose()
    assert r.text == "Paris" and r.tokens_in > 0 and r.tokens_out > 0 and r.finish_reason == "stop"
    assert c.usage.tokens_in == r.tokens_in and c.usage.cost_usd is not None and c.usage.cost_usd > 0


async def test_openai_compatible_without_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with LoopbackServer() as srv:
        c = make_client("openai/Qwen/Qwen3-8B", base_url=srv.openai_base_url)
        r = await c.complete(c.request("hello"))
        await c.aclose()
    assert r.text == "echo: hello"
    assert c.usage.cost_usd is None  # unknown model -> cost None


async def test_anthropic_round_trip():
    seen = []

    def script(messages, body):
        seen.append(body)
        return "Bonjour"

    async with LoopbackServer(script) as srv:
        c = make_client("anthropic/claude-haiku-4-5", base_url=srv.anthropic_base_url, api_key="sk-ant")
        r = await c.complete(c.request([{"role": "system", "content": "be brief"},
                                        {"role": "user", "content": "hi"}], max_tokens=50))
        await c.aclose()
    assert r.text == "Bonjour" and r.tokens_in > 0 and r.tokens_out > 0
    assert seen[0]["system"] == "be brief" and seen[0]["max_tokens"] == 50
    assert seen[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_cache_hit_makes_no_request():
    provider = FakeProvider(lambda request: "echo: " + request.messages[-1]["content"])
    c = Client(provider, model="m", cache=MemoryCache())
    req = c.request("same", temperature=0.0)
    a = await c.complete(req)
    b = await c.complete(ChatRequest(**req.model_dump()))
    assert len(provider.requests) == 1
    assert a == b and c.usage.cache_hits == 1 and c.usage.requests == 1


def test_transport_auto_picks_aiohttp_for_compatible_servers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert type(make_provider("openai", base_url="http://127.0.0.1:9/v1")).__name__ == "OpenAIRawProvider"
    assert type(make_provider("openai")).__name__ == "OpenAIProvider"
    assert type(make_provider("openai", base_url="http://127.0.0.1:9/v1", transport="sdk")).__name__ == "OpenAIProvider"
    with pytest.raises(ValueError, match="auto, sdk, aiohttp"):
        make_provider("openai", transport="httpx")


@pytest.mark.parametrize("transport", ["sdk", "aiohttp"])
async def test_401_raises_immediately(transport):
    async with LoopbackServer(api_key="right") as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, api_key="wrong", max_attempts=5,
                        transport=transport)
        with pytest.raises(AuthenticationError) as ei:
            await c.complete(c.request("x"))
        await c.aclose()
        assert srv.total == 1  # not retried
    assert "401" in str(ei.value) and "wrong" not in str(ei.value)  # key never echoed


async def test_anthropic_401():
    async with LoopbackServer(api_key="right") as srv:
        c = make_client("anthropic/claude-haiku-4-5", base_url=srv.anthropic_base_url, api_key="nope")
        with pytest.raises(AuthenticationError):
            await c.complete(c.request("x"))
        await c.aclose()
        assert srv.total == 1


async def test_retry_after_and_shared_cooldown():
    # the first request gets a 429 with Retry-After: 0.5; every worker must wait it out
    async def server(request: ChatRequest) -> str:
        await asyncio.sleep(0.05)
        if len(provider.requests) == 1:
            raise RateLimitError("HTTP 429: slow down", retry_after=0.5)
        return "echo: " + request.messages[-1]["content"]

    provider = FakeProvider(server)
    c = Client(provider, model="m", concurrency=8)
    first = asyncio.create_task(c.complete(c.request("first")))
    for _ in range(500):  # until the first call has its 429
        if c.usage.rate_limited:
            break
        await asyncio.sleep(0.01)
    t_start = time.monotonic()
    others = await asyncio.gather(*(c.complete(c.request(f"q{i}")) for i in range(8)))
    t_others = time.monotonic() - t_start
    r1 = await first
    assert r1.text == "echo: first" and len(others) == 8
    assert c.usage.rate_limited == 1 and c.usage.retries == 1
    # the workers sent during the shared cool-down waited for it: the 429 halved the calls in flight to 4
    assert c.usage.cooldown_waits >= 4
    assert c.usage.cooldown_wait_s > 4 * 0.3
    assert t_others >= 0.35  # the behaviour, not a speed: they could not send before the cool-down passed


async def test_500_calls_with_20pct_faults_all_finish():
    faults = Faults(p429=0.1, p500=0.1, retry_after=0.01)
    async with LoopbackServer(latency=0.001, faults=faults, seed=1) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, concurrency=32, max_attempts=10,
                        backoff_base=0.01, cache=MemoryCache())
        results = await asyncio.gather(*(c.complete(c.request(f"item {i}")) for i in range(500)))
        await c.aclose()
        st = srv.stats()
    assert [r.text for r in results] == [f"echo: item {i}" for i in range(500)]
    assert st["by_kind"].get("429", 0) > 30 and st["by_kind"].get("500", 0) > 30
    assert st["ok"] == 500  # no call answered twice
    assert c.usage.successes == 500 and c.usage.failures == 0


@pytest.mark.parametrize("transport", ["sdk", "aiohttp"])
@pytest.mark.parametrize("kind", ["malformed", "drop", "hang", "500"])
async def test_each_transient_fault_retried(kind, transport):
    async with LoopbackServer(faults=Faults(fail_first=2, fail_first_kind=kind, hang_s=5)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, timeout=0.5, backoff_base=0.01,
                        transport=transport)
        r = await c.complete(c.request("x"))
        await c.aclose()
        assert srv.total == 3
    assert r.text == "echo: x" and c.usage.retries == 2


async def test_slot_given_back_while_sleeping_between_attempts():
    async def server(request: ChatRequest) -> str:
        await asyncio.sleep(0.02)
        if len(provider.requests) == 1:
            raise ServerError("HTTP 500: boom", status=500)
        return "ok"

    provider = FakeProvider(server)
    c = Client(provider, concurrency=1, model="m")
    c._retries._wait = lambda state: 0.6  # a fixed back-off, long enough to see the slot given back
    done: list[str] = []

    async def ask(q: str) -> None:
        await c.complete(c.request(q))
        done.append(q)

    first = asyncio.create_task(ask("first"))  # gets the 500, then backs off for 0.6 s
    await asyncio.sleep(0.1)
    await asyncio.wait_for(ask("second"), 0.4)  # the only slot is free during that back-off
    await first
    assert done == ["second", "first"] and c.usage.retries == 1 and len(provider.requests) == 3


async def test_gives_up_after_max_attempts_and_stores_error():
    class RecordingCache(MemoryCache):
        pass

    def server(request: ChatRequest) -> str:
        raise ServerError("HTTP 500: boom", status=500)

    cache = RecordingCache()
    provider = FakeProvider(server)
    c = Client(provider, model="m", max_attempts=3, backoff_base=0.01, cache=cache)
    req = c.request("x")
    with pytest.raises(Exception) as ei:
        await c.complete(req)
    assert len(provider.requests) == 3
    assert "3 attempts" in str(ei.value)
    assert req.key() in cache.errors and req.key() not in cache.results


class Answer(BaseModel):
    value: int
    unit: str


async def structured_asked_again(c: Client, request: ChatRequest) -> Answer:
    """A structured call, and once more with the errors when its reply is not valid (the compile loop's way)."""
    try:
        return await c.structured(request, Answer)
    except StructuredOutputError as e:
        return await c.structured(request.model_copy(update={"messages": [*request.messages, *e.reask()]}), Answer)


async def test_structured_replies_are_cached_the_invalid_one_too():
    answers = iter(['{"value": "oops', '{"value": 42, "unit": "m"}', '{"value": 1, "unit": "x"}'])
    provider = FakeProvider(lambda request: next(answers))
    cache = MemoryCache()
    c = Client(provider, model="m", cache=cache)
    req = c.request("How far?")
    out = await structured_asked_again(c, req)
    assert out.model_dump() == {"value": 42, "unit": "m"} and len(provider.requests) == 2
    # rerun: both raw replies come from the cache, no request
    c2 = Client(provider, model="m", cache=cache)
    out2 = await structured_asked_again(c2, req)
    assert out2.model_dump() == out.model_dump() and len(provider.requests) == 2
    assert len(cache.results) == 2


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "tools", "md_json"])
async def test_structured_schema_reaches_the_model_once_per_mode(mode: str) -> None:
    """Each structured mode carries the model's own schema (made once per Client, never changed) in
    exactly one place: the response_format, the prompt (json_object's, beside a JSON-object
    response_format, as instructor's JSON mode sends it), or the tool."""
    seen: list[dict] = []

    def script(messages, body):
        seen.append(body)
        return '{"value": 3, "unit": "m"}'

    async with LoopbackServer(script) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, structured=mode)
        for question in ("How far?", "How high?"):
            assert (await c.structured(c.request(question), Answer)).value == 3
        await c.aclose()
    schema = Answer.model_json_schema()
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    assert len(seen) == 2
    for body, question in zip(seen, ("How far?", "How high?")):
        prompt = "\n".join(m["content"] for m in body["messages"])
        assert question in body["messages"][-1]["content"]
        in_prompt = text[1:] in prompt
        if mode == "json_schema":
            assert not in_prompt and body["response_format"]["json_schema"]["schema"] == schema
            assert "tools" not in body
        elif mode == "json_object":
            assert in_prompt and body["response_format"] == {"type": "json_object"}
        elif mode == "tools":
            assert not in_prompt and "response_format" not in body
            assert body["tools"][0]["function"]["parameters"]["properties"] == schema["properties"]
        else:
            assert in_prompt and "response_format" not in body and "tools" not in body
    assert Answer.model_json_schema() == schema  # nothing was changed in place


async def test_structured_validation_error_anthropic():
    answers = ['{"value": 1}', '{"value": 2, "unit": "s"}']
    async with LoopbackServer(answers) as srv:
        c = make_client("anthropic/claude-haiku-4-5", base_url=srv.anthropic_base_url, api_key="k")
        request = c.request("t?")
        with pytest.raises(StructuredOutputError) as info:
            await c.structured(request, Answer)
        out = await c.structured(request.model_copy(update={"messages": [*request.messages, *info.value.reask()]}),
                                 Answer)
        await c.aclose()
    assert [e["loc"] for e in info.value.errors] == [("unit",)] and srv.total == 2
    assert out.model_dump() == {"value": 2, "unit": "s"} and isinstance(out, Answer)


@pytest.mark.parametrize("transport", ["sdk", "aiohttp"])
async def test_reasoning_model_refusals_are_learned_once(transport, caplog):
    """gpt-5-style models refuse max_tokens and temperature != 1 (HTTP 400 naming each): the
    provider re-sends without them, remembers it for that model only, and says so once."""
    bodies: list[dict] = []

    def script(messages, body):
        bodies.append(body)
        return "ok"

    async with LoopbackServer(script, refusing_models=("gpt-5",)) as srv:
        c = make_client("openai/gpt-5.4", base_url=srv.openai_base_url, transport=transport, cache=MemoryCache())
        first = await c.complete(c.request("a", temperature=0.0, max_tokens=50))
        second = await c.complete(c.request("b", temperature=0.0, max_tokens=50))
        other = await c.complete(c.request("c", model="gpt-4.1", temperature=0.0, max_tokens=50))
        assert srv.total == 5 and srv.by_kind["400"] == 2  # a: refused twice, then answered; b and c: once
        # a second model of that kind, 8 calls at once: all refused together, all re-sent, all answered
        burst = await asyncio.gather(*(c.complete(c.request(f"d{i}", model="gpt-5-mini", temperature=0.0,
                                                            max_tokens=50)) for i in range(8)))
        await c.aclose()
    assert [r.text for r in (first, second, other, *burst)] == ["ok"] * 11
    assert [b.get("max_completion_tokens") for b in bodies] == [50, 50, None] + [50] * 8
    assert ["temperature" in b or "max_tokens" in b for b in bodies] == [False, False, True] + [False] * 8
    assert (bodies[2]["temperature"], bodies[2]["max_tokens"]) == (0.0, 50)
    assert (c.usage.requests, c.usage.successes, c.usage.failures, c.usage.retries) == (11, 11, 0, 0)
    refused = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(refused) == 4  # once per model and parameter
    assert sum("max_tokens" in m for m in refused) == 2 and sum("temperature" in m for m in refused) == 2


async def test_anthropic_deprecated_sampling_params_are_learned_once(caplog):
    """Anthropic's newest models answer temperature (and top_p, top_k) with a 400 saying it "is
    deprecated for this model": re-sent without, for that model only."""
    bodies: list[dict] = []

    def script(messages, body):
        bodies.append(body)
        return "ok"

    async with LoopbackServer(script, refusing_models=("claude-opus-5",)) as srv:
        c = make_client("anthropic/claude-opus-5", base_url=srv.anthropic_base_url, api_key="k")
        first = await c.complete(c.request("a", temperature=0.0, top_p=0.9, max_tokens=50))
        second = await c.complete(c.request("b", temperature=0.0, top_p=0.9, max_tokens=50))
        other = await c.complete(c.request("c", model="claude-haiku-4-5", temperature=0.0, max_tokens=50))
        await c.aclose()
    assert [r.text for r in (first, second, other)] == ["ok", "ok", "ok"]
    assert srv.total == 5 and srv.by_kind["400"] == 2
    assert [("temperature" in b, "top_p" in b, b["max_tokens"]) for b in bodies] == [
        (False, False, 50), (False, False, 50), (True, False, 50)]
    assert (c.usage.requests, c.usage.successes, c.usage.failures) == (3, 3, 0)
    refused = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(refused) == 2 and "temperature" in refused[0] and "top_p" in refused[1]


async def test_anthropic_sampling_params_reach_the_wire():
    """anthropic>=1.0 dropped temperature/top_p/top_k from messages.create(); they still must be sent."""
    bodies: list[dict] = []

    def script(messages, body):
        bodies.append(body)
        return "ok"

    async with LoopbackServer(script) as srv:
        c = make_client("anthropic/claude-haiku-4-5", base_url=srv.anthropic_base_url, api_key="k")
        r = await c.complete(c.request([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                                       temperature=0.2, top_p=0.9, top_k=5, max_tokens=7, stop="END"))
        await c.aclose()
    assert r.text == "ok"
    body = bodies[0]
    assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (0.2, 0.9, 5, 7)
    assert body["stop_sequences"] == ["END"] and body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_inflight_dedupe():
    async def server(request: ChatRequest) -> str:
        await asyncio.sleep(0.05)
        return f"answer {len(provider.requests)}"

    provider = FakeProvider(server)
    c = Client(provider, model="m")
    rs = await asyncio.gather(*(c.complete(c.request("dup")) for _ in range(5)))
    assert len(provider.requests) == 1
    assert len({r.text for r in rs}) == 1


async def test_rpm_limit_spaces_requests():
    c = Client(FakeProvider(lambda request: "ok"), model="m", rpm=600)  # 10/s, burst 600
    c._rpm.tokens = 0  # start empty so the rate shows
    t0 = time.monotonic()
    await asyncio.gather(*(c.complete(c.request(f"r{i}")) for i in range(5)))
    # the behaviour, not a speed: 5 requests at 10 a second cannot all be sent in under 0.4 s
    assert time.monotonic() - t0 >= 0.4


def test_thread_mode_and_key_not_in_request():
    with LoopbackServer() as srv:
        async def go():
            c = make_client("openai/m", base_url=srv.openai_base_url, api_key="sk-secret-123")
            r = await c.complete(c.request("t"))
            await c.aclose()
            return c, r
        c, r = asyncio.run(go())
        assert srv.total == 1
    assert "sk-secret-123" not in c.request("t").model_dump_json()
    assert r.text == "echo: t"


async def test_auto_structured_mode_steps_down_once_per_rejection(caplog) -> None:
    """A server without response_format (HTTP 400 naming it): json_schema and json_object are each
    rejected once, said once, never retried; the answer comes as a tool call, and the next call
    goes straight to tools."""
    async with LoopbackServer(lambda m, b: '{"value": 3, "unit": "m"}', unsupported_fields=("response_format",)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url)
        for question in ("How far?", "How high?"):
            assert (await c.structured(c.request(question), Answer)).value == 3
        await c.aclose()
        assert srv.total == 4 and srv.by_kind["400"] == 2
    assert c.usage.retries == 0 and c.usage.failures == 2 and c.usage.successes == 2
    learned = [r.getMessage() for r in caplog.records if "rejects structured mode" in r.getMessage()]
    assert len(learned) == 2
    assert "mode json_schema" in learned[0] and "use json_object from now on" in learned[0]
    assert "mode json_object" in learned[1] and "use tools from now on" in learned[1]


async def test_fixed_structured_mode_is_not_stepped_down() -> None:
    async with LoopbackServer(["{}"], unsupported_fields=("response_format",)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url, structured="json_schema")
        with pytest.raises(Exception) as info:
            await c.structured(c.request("How far?"), Answer)
        await c.aclose()
        assert srv.total == 1 and isinstance(info.value, BadRequestError)


async def test_a_400_that_names_no_structured_field_keeps_the_mode(caplog) -> None:
    """A 400 about something else (here an unsupported seed) is the call's failure, not the mode's."""
    async with LoopbackServer(["{}"], unsupported_fields=("seed",)) as srv:
        c = make_client("openai/m", base_url=srv.openai_base_url)
        with pytest.raises(Exception) as info:
            await c.structured(c.request("How far?", seed=1), Answer)
        await c.aclose()
        assert srv.total == 1 and isinstance(info.value, BadRequestError)
    assert not [r for r in caplog.records if "rejects structured mode" in r.getMessage()]
