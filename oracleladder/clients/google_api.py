"""Google's Gemini API through its SDK (google-genai): ``generateContent`` (``GoogleProvider``) and its
batch mode (``GoogleBatchAPI``: ``batchGenerateContent`` with inlined requests).

A ChatRequest becomes the SDK's arguments (``generate_args``): the system messages its
``system_instruction``, the others its ``contents`` (an assistant's turn is the "model" role), the
token budget its ``max_output_tokens``, and a structured call's JSON-schema ``response_format`` its
``response_mime_type`` "application/json" and ``response_schema`` (the schema as instructor's
GENAI_STRUCTURED_OUTPUTS mode gives it, from which the SDK makes Gemini's own). A reply a safety
filter blocked is ``ContentRefused``: a failed call, never an answer. A batch row is the same
request (its custom_id in the row's metadata), its inlined response read as an online reply; a row's
error is that row's failure.

Declared as the google/ wire (``WIRE``). Install with ``pip install 'oracleladder[google]'``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from .._lazy import lazy_module
from .base import ChatRequest, ChatResult
from .batch_api import BatchStatus, BatchWire, Outcome, Row, create_error
from .errors import (
    BadRequestError,
    ConfigurationError,
    ContentRefused,
    MalformedResponse,
    ProviderError,
    classify_status,
    genai_error,
)
from .openai_api import MODES as OPENAI_MODES
from .providers import connection_key, endpoint_of
from .registry import Connection, ProviderModes, ProviderSpec
from .structured import wire_body
from .usage import token_count
from .wire import Refusals, answer

if TYPE_CHECKING:
    import httpx2
    from google import genai
else:  # an optional extra, loaded by the first google/ client (its package loads its errors and types)
    genai = lazy_module("google.genai")
    httpx2 = lazy_module("httpx2")  # the SDK's HTTP layer

GOOGLE_URL = "https://generativelanguage.googleapis.com"
INSTALL_HINT = "pip install 'oracleladder[google]'"
RENAMED = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}  # the toolkit's names, Gemini's
# the finish reasons of a reply a filter blocked (the same request is blocked again)
BLOCKED = {"SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}
# a batch's state (the SDK's JobState) in the toolkit's words (batch_api.ENDED, COMPLETED)
BATCH_STATES = {"JOB_STATE_PENDING": "pending", "JOB_STATE_RUNNING": "running", "JOB_STATE_SUCCEEDED": "completed",
                "JOB_STATE_FAILED": "failed", "JOB_STATE_CANCELLED": "cancelled", "JOB_STATE_EXPIRED": "expired"}
# a batch row's error code (google.rpc.Code) as the HTTP status its online call would have met
RPC_STATUS = {3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 11: 400, 13: 500, 14: 503, 16: 401}
BATCH_WINDOW_S = 48 * 3600.0  # Gemini expires a batch still pending or running after 48 h


def generate_args(request: ChatRequest) -> dict[str, Any]:
    """``models.generate_content``'s arguments for ``request`` (its config a plain dict); a structured
    call's messages and parameters as its mode builds them (``wire_body``, in OpenAI's shape)."""
    body = {"messages": request.messages, **request.params}
    if request.mode is not None:
        body = wire_body(request, body)
    messages = body.pop("messages")
    system = [m["content"] for m in messages if m.get("role") == "system"]
    contents = [{"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
                for m in messages if m.get("role") != "system"]
    config: dict[str, Any] = {"system_instruction": "\n\n".join(system)} if system else {}
    for k, v in body.items():
        if k == "response_format":  # a structured call's schema (mode json_schema, or json_object's)
            schema = v["json_schema"]["schema"] if v.get("type") == "json_schema" else v.get("schema")
            config["response_mime_type"] = "application/json"
            if schema is not None:  # copied: the SDK rewrites the schema it is given in place
                config["response_schema"] = copy.deepcopy(schema)
        elif k == "extra_body":  # fields of Gemini's generation config (thinking_config, ...)
            config.update(v)
        elif k == "stop":
            config["stop_sequences"] = [v] if isinstance(v, str) else list(v)
        else:
            config[RENAMED.get(k, k)] = v
    return {"model": request.model, "contents": contents, "config": config}


def content_result(response: Any, latency: float) -> ChatResult:
    """A ``GenerateContentResponse`` as a ChatResult; ContentRefused when a filter blocked it."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise ContentRefused(f"google blocked the prompt ({_name(feedback.block_reason)})")
    if not response.candidates:
        raise MalformedResponse("google returned no candidate")
    candidate = response.candidates[0]
    reason = _name(candidate.finish_reason) if candidate.finish_reason is not None else None
    if reason in BLOCKED:
        raise ContentRefused(f"google refused to answer (finish reason {reason})")
    parts = (candidate.content.parts if candidate.content is not None else None) or []
    usage = response.usage_metadata
    tokens_in = usage.prompt_token_count if usage is not None else None
    # thinking is billed as output
    tokens_out = (token_count(usage.candidates_token_count, "candidatesTokenCount")
                  + token_count(usage.thoughts_token_count, "thoughtsTokenCount")) if usage is not None else 0
    return ChatResult(text="".join(p.text for p in parts if p.text and not p.thought),
                      tokens_in=token_count(tokens_in, "promptTokenCount"),
                      tokens_out=tokens_out, latency_s=latency, finish_reason=reason.lower() if reason else None,
                      metered=tokens_in is not None)


def _name(value: Any) -> str:
    """An SDK enum's name (or the string the SDK left it as, for a value newer than it)."""
    return str(getattr(value, "value", value))


def sdk_client(name: str, connection: Connection, api_version: str | None = None) -> genai.Client:
    """The SDK's client for the connection's server (its retries off), with no key sent when there is
    none; ``api_version``: the API version it asks (None: the SDK's, v1)."""
    key = connection_key("google", connection)
    options: dict[str, Any] = {"base_url": connection.base_url or GOOGLE_URL,
                               "timeout": int(connection.timeout * 1000)}  # milliseconds
    if api_version is not None:
        options["api_version"] = api_version
    if not key:  # the SDK takes a missing key from GEMINI_API_KEY itself: it gets a placeholder, sent empty
        options["headers"] = {"x-goog-api-key": ""}
    try:
        return genai.Client(api_key=key or "no-key", http_options=genai.types.HttpOptions(**options))
    except ImportError:
        raise ConfigurationError(f"{name}/ models need the google-genai SDK: {INSTALL_HINT}") from None


def config_error(e: ValidationError) -> BadRequestError:
    """A generation config the SDK cannot take (a parameter Gemini has no field for)."""
    return BadRequestError(f"google: not a generation config: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}")


class GoogleProvider:
    """Gemini's ``generateContent`` through the SDK's async client (``client.aio``), one HTTP request
    per call (the SDK's retries are off: the runner retries)."""

    name = "google"

    def __init__(self, connection: Connection) -> None:
        self.endpoint = endpoint_of("google", connection.base_url)
        self._client = sdk_client(self.name, connection)

    async def complete(self, request: ChatRequest) -> ChatResult:
        args = generate_args(request)
        try:
            config = genai.types.GenerateContentConfig(**args.pop("config"))
        except ValidationError as e:
            raise config_error(e) from None
        t0 = time.perf_counter()
        try:
            response = await self._client.aio.models.generate_content(**args, config=config)
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:  # ValueError: a body it cannot read
            raise genai_error(genai.errors, e, self.name) from None
        return answer(content_result(response, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        await self._client.aio.aclose()


class GoogleBatchAPI(BatchWire):
    """Gemini's batch mode (``batches``): a batch of inlined requests, each with its custom_id in its
    metadata, and its display name the intent (``find``); its responses inlined in the batch."""

    name = "google"
    max_requests = 100_000
    max_bytes = 20 * 1024 * 1024  # Gemini's limit on a batch of inlined requests
    window = BATCH_WINDOW_S

    def __init__(self, connection: Connection) -> None:
        super().__init__(connection)
        # Google serves its batch API at v1beta (https://ai.google.dev/api/batch-api), the SDK asks v1
        self._client = sdk_client(self.name, connection, api_version="v1beta")
        self.refusals = Refusals(self.name, generate_args, set())  # Gemini refuses no parameter one can drop

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {**self.refusals.body(request), "metadata": {"custom_id": custom_id}}

    async def check(self) -> None:
        try:
            await self._client.aio.batches.list(config={"page_size": 1})
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:
            raise self.unavailable(genai_error(genai.errors, e, self.name)) from None

    async def submit(self, entries: list[dict[str, Any]], intent: str) -> str:
        # each entry an InlinedRequest's fields (`entry`: generate_args' body), checked by the SDK (ValidationError)
        inlined = cast("list[genai.types.InlinedRequestDict]", entries)
        try:
            b = await self._client.aio.batches.create(model=entries[0]["model"], src={"inlined_requests": inlined},
                                                      config={"display_name": intent})
        except ValidationError as e:  # made no batch
            raise config_error(e) from None
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:
            raise create_error(genai_error(genai.errors, e, self.name)) from None
        if not b.name:
            raise MalformedResponse("google batch create: no batch name in its reply")
        return b.name

    async def find(self, intent: str, requests: int, at: datetime, known: set[str]) -> str | None:
        """The listed batch named ``intent`` (a unique id) that is not ``known``: the whole list is read,
        as Gemini does not say in what order it lists them."""
        try:
            async for b in await self._client.aio.batches.list(config={"page_size": 100}):
                if b.display_name == intent and b.name and b.name not in known:
                    return b.name
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:
            raise genai_error(genai.errors, e, self.name) from None
        return None

    async def _get(self, batch_id: str) -> Any:
        try:
            return await self._client.aio.batches.get(name=batch_id)
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:
            raise genai_error(genai.errors, e, self.name) from None

    async def status(self, batch_id: str) -> BatchStatus:
        b = await self._get(batch_id)
        state = _name(b.state)
        responses = (b.dest.inlined_responses if b.dest is not None else None) or []
        failed = sum(r.error is not None for r in responses)
        return BatchStatus(BATCH_STATES.get(state, state.lower()), len(responses) - failed, failed)

    async def results(self, batch_id: str) -> AsyncIterator[Row]:
        b = await self._get(batch_id)
        for n, r in enumerate((b.dest.inlined_responses if b.dest is not None else None) or [], 1):
            custom_id = (r.metadata or {}).get("custom_id")
            if custom_id is None:
                yield None, MalformedResponse(f"google batch {batch_id} response {n} has no custom_id")
            else:
                yield custom_id, self._outcome(r)

    def _outcome(self, r: Any) -> Outcome:
        if r.error is not None:
            status = RPC_STATUS.get(r.error.code or 0, 500)
            return classify_status(status, f"google batch row error {r.error.code}: {r.error.message or ''}")
        if r.response is None:
            return MalformedResponse("google batch row: neither a response nor an error")
        try:
            return answer(content_result(r.response, 0.0), self.name)
        except ProviderError as e:
            return e

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.aio.batches.cancel(name=batch_id)
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:
            raise genai_error(genai.errors, e, self.name) from None

    async def aclose(self) -> None:
        await self._client.aio.aclose()


def not_found(error: BaseException, where: str) -> str:
    return (f"{where}: {' '.join(str(error).split())} (does this server speak Gemini's generateContent, "
            f"and serve this model?)")


# the JSON-schema response_format instructor's OpenAI handler builds becomes Gemini's response_schema
# (generate_args reads OpenAI's shape); no OpenAI tools
MODES = ProviderModes("OPENAI", {m: OPENAI_MODES.modes[m] for m in ("json_schema", "md_json")},
                      OPENAI_MODES.reply)
# GEMINI_API_KEY, else GOOGLE_API_KEY (Google's SDK reads both)
WIRE = ProviderSpec("google", GoogleProvider, MODES,
                    key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"), base_url=GOOGLE_URL, batch=GoogleBatchAPI, not_found=not_found)
