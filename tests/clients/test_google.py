"""Gemini (google/MODEL) through the real google-genai SDK against the loopback server speaking its
wire (generateContent): the request as Gemini takes it, a structured call's schema as the SDK sends
the response_schema instructor's GENAI_STRUCTURED_OUTPUTS mode gives it (the pydantic model), usage
and price, a safety refusal and the HTTP errors mapped, and the key sent to Google's host only."""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest

from oracleladder.clients import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    MemoryCache,
    google_api,
    make_client,
)
from oracleladder.clients.batch import make_batch_client
from oracleladder.clients.errors import ContentRefused
from oracleladder.domains.math.plan import TeacherPlan
from oracleladder.testing import Faults, LoopbackServer
from tests.helpers.roots import GOOD

MODEL = "google/gemini-2.5-flash"


class Recorder:
    """A script answering ``reply``, keeping each request body and path as the server got it."""

    def __init__(self, reply: str = "hello") -> None:
        self.reply = reply
        self.bodies: list[dict] = []

    def __call__(self, messages: list[dict], body: dict) -> str:
        self.bodies.append(body)
        return self.reply


async def test_a_chat_call_is_gemini_s_request_and_its_usage_is_counted_and_priced() -> None:
    script = Recorder("Paris.")
    async with LoopbackServer(script) as srv:
        async with make_client(MODEL, base_url=srv.google_base_url) as client:
            messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"},
                        {"role": "assistant", "content": "Paris?"}, {"role": "user", "content": "Sure?"}]
            result = await client.complete(client.request(messages, temperature=0.0, max_tokens=64, stop="\n\n"))
            assert client.usage.cost_usd == pytest.approx((result.tokens_in * 0.3 + result.tokens_out * 2.5) / 1e6)
    [body] = script.bodies
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Capital of France?"), ("model", "Paris?"), ("user", "Sure?")]
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 64, "stopSequences": ["\n\n"]}
    assert (result.text, result.finish_reason, result.metered) == ("Paris.", "stop", True)
    assert (result.tokens_in, result.tokens_out) == srv.billed[0] and result.tokens_in > 0


async def test_a_structured_call_sends_the_schema_once_as_instructor_s_genai_mode_does() -> None:
    script = Recorder(json.dumps(GOOD))
    async with LoopbackServer(script) as srv:
        async with make_client(MODEL, base_url=srv.google_base_url, cache=MemoryCache()) as client:
            plan = await client.structured(client.request("Plan it.", temperature=0.0, max_tokens=512), TeacherPlan)
            again = await client.structured(client.request("Plan it.", temperature=0.0, max_tokens=512), TeacherPlan)
        # what GENAI_STRUCTURED_OUTPUTS hands the SDK: the pydantic model as response_schema, the JSON mime type;
        # the SDK imported here, not at the top: a second of CPU each pytest-xdist worker's collection paid
        genai = importlib.import_module("google.genai")
        types = genai.types
        sdk = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=srv.google_base_url))
        await sdk.aio.models.generate_content(
            model="gemini-2.5-flash", contents=[{"role": "user", "parts": [{"text": "Plan it."}]}],
            config=types.GenerateContentConfig(temperature=0.0, max_output_tokens=512,
                                               response_mime_type="application/json", response_schema=TeacherPlan))
        await sdk.aio.aclose()
    ours, instructors = script.bodies
    assert plan == again == TeacherPlan.model_validate(GOOD) and srv.total == 2  # the second call from the cache
    assert ours == instructors
    assert ours["generationConfig"]["responseMimeType"] == "application/json"
    assert json.dumps(ours).count('"PlannedMilestone"') == 1  # the schema once, and not in the prompt
    assert "schema" not in json.dumps(ours["contents"]).lower()


async def test_only_the_modes_gemini_takes_and_its_batch_api() -> None:
    with pytest.raises(ConfigurationError, match="google takes structured mode json_schema, md_json"):
        make_client(MODEL, base_url="http://127.0.0.1:9", structured="tools")
    async with make_batch_client(MODEL, base_url="http://127.0.0.1:9", cache=MemoryCache()) as client:
        assert client.batch and client.name == MODEL  # Gemini's batch mode (tests/clients/test_google_batch.py)


async def test_a_safety_block_is_a_failed_call_never_an_answer_nor_retried() -> None:
    async with LoopbackServer(Recorder(""), finish_reason="SAFETY") as srv:
        cache = MemoryCache()
        async with make_client(MODEL, base_url=srv.google_base_url, cache=cache) as client:
            request = client.request("Something unsafe")
            with pytest.raises(ContentRefused, match="finish reason SAFETY"):
                await client.complete(request)
        assert srv.total == 1 and request.key() in cache.errors and not cache.results


@pytest.mark.parametrize("kind, error, requests", [("429", None, 2), ("500", None, 2), ("malformed", None, 2),
                                                   ("401", AuthenticationError, 1)])
async def test_http_errors_are_mapped_as_every_provider_s(kind: str, error, requests: int) -> None:
    async with LoopbackServer(Recorder("ok"), faults=Faults(fail_first=1, fail_first_kind=kind)) as srv:
        async with make_client(MODEL, base_url=srv.google_base_url, backoff_base=0.01) as client:
            if error is None:  # retried by the runner (the SDK's own retries are off)
                assert (await client.complete(client.request("hi"))).text == "ok"
            else:
                with pytest.raises(error):
                    await client.complete(client.request("hi"))
        assert srv.total == requests


async def test_a_parameter_gemini_has_no_field_for_is_a_bad_request_sent_nowhere() -> None:
    async with LoopbackServer(Recorder("ok")) as srv:
        async with make_client(MODEL, base_url=srv.google_base_url, extra_body={"no_such_field": 1}) as client:
            with pytest.raises(BadRequestError, match="no_such_field"):
                await client.complete(client.request("hi"))
        assert srv.total == 0


async def test_the_key_reaches_google_s_host_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-gemini-SECRET")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    async with LoopbackServer(Recorder("ok")) as srv:
        # the loopback server as "Google's host" (localhost), and as any other server (127.0.0.1)
        own = f"http://localhost:{srv.port}"
        monkeypatch.setattr(google_api, "GOOGLE_URL", own)
        monkeypatch.setattr(google_api, "WIRE", dataclasses.replace(google_api.WIRE, base_url=own))
        for model, url in [("google/m", None), ("google/m", srv.google_base_url),
                           ("openai/m", srv.openai_base_url), ("anthropic/m", srv.anthropic_base_url)]:
            async with make_client(model, base_url=url, transport="sdk" if model.startswith("openai") else "auto") as c:
                await c.complete(c.request(f"hi {model} {url}"))
        monkeypatch.delenv("GEMINI_API_KEY")
        monkeypatch.setenv("GOOGLE_API_KEY", "AIza-google-SECRET")  # the SDK's other variable
        async with make_client("google/m") as c:
            await c.complete(c.request("hi again"))
    assert srv.credentials == ["AIza-gemini-SECRET", None, None, None, "AIza-google-SECRET"]
