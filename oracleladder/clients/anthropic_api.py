"""Anthropic's API through its official SDK: Messages (``AnthropicProvider``) and Message Batches
(``AnthropicBatchAPI``), declared as the anthropic/ wire (``WIRE``). A structured call's body is its
mode's (``structured.wire_body``: a forced tool_use, or the schema in the top-level ``system``)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from . import batch_api
from .base import ChatRequest, ChatResult
from .errors import MalformedResponse, ProviderError, ServerError, classify_status, sdk_error
from .providers import connection_key, endpoint_of
from .registry import Connection, ProviderModes, ProviderSpec
from .structured import anthropic_reply, wire_body
from .usage import token_count
from .wire import Refusals, answer

if TYPE_CHECKING:
    import anthropic
else:  # loaded by the first client that uses it, not by `ladder --help` (3 to 3.6 s on a loaded 2-core machine)
    anthropic = lazy_module("anthropic")

ANTHROPIC_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires one
MESSAGES_PARAMS = {"max_tokens", "stop_sequences", "thinking"}
# The SDK (1.0 on) has no keyword for these any more and takes them through extra_body: same wire.
# They are also what Anthropic's newest models refuse (wire.Refusals).
SAMPLING = {"temperature", "top_p", "top_k"}
# Anthropic's error types, as the HTTP status its online API answers them with
_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
           "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
           "api_error": 500, "overloaded_error": 529}


def messages_body(request: ChatRequest) -> dict[str, Any]:
    """The Messages body as the SDK takes it (what goes at the body's top level under ``extra_body``):
    the system messages in its top-level ``system``; a structured call's as its mode builds it."""
    body: dict[str, Any] = {"model": request.model}
    for k, v in request.params.items():
        if k in MESSAGES_PARAMS:
            body[k] = v
        elif k in SAMPLING:
            body.setdefault("extra_body", {})[k] = v
        elif k == "stop":
            body["stop_sequences"] = [v] if isinstance(v, str) else list(v)
    if request.params.get("extra_body"):  # the SDK sends these at the body's top level
        body.setdefault("extra_body", {}).update(request.params["extra_body"])
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    if request.mode is not None:  # the mode's handler moves the system messages itself
        return wire_body(request, {**body, "messages": request.messages})
    system = [m["content"] for m in request.messages if m.get("role") == "system"]
    body["messages"] = [{"role": m["role"], "content": m["content"]} for m in request.messages
                        if m.get("role") != "system"]
    if system:
        body["system"] = "\n\n".join(system)
    return body


def content_text(content: list[dict[str, Any]]) -> str:
    """The reply a Messages content holds: its text, or, when it has none but a tool_use, that
    tool's input as JSON (mode tools forces its reply as a tool_use; no other request asks for a
    tool, so a reply is read without its mode)."""
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    tool = next((b for b in content if b.get("type") == "tool_use"), None)
    if not text and tool is not None:
        return json.dumps(tool["input"], ensure_ascii=False)
    return text


def messages_result(data: Any, latency: float) -> ChatResult:
    """A Messages reply body as a ChatResult (MalformedResponse if it is not one)."""
    try:
        text = content_text(data["content"])
        usage = data.get("usage") or {}
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        finish_reason = data.get("stop_reason")
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise MalformedResponse(f"malformed messages body: {e!r}") from None
    return ChatResult(text=text, tokens_in=token_count(tokens_in, "input_tokens"),
                      tokens_out=token_count(tokens_out, "output_tokens"), latency_s=latency,
                      finish_reason=finish_reason, metered=tokens_in is not None and tokens_out is not None)


class AnthropicProvider:
    """Anthropic messages API through the official ``AsyncAnthropic`` SDK (aiohttp transport)."""

    name = "anthropic"

    def __init__(self, connection: Connection) -> None:
        self.endpoint = endpoint_of("anthropic", connection.base_url)
        key = connection_key("anthropic", connection)
        omit = {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}
        self._headers: dict[str, Any] = {} if key else {"extra_headers": omit}  # keywords of every call
        kw: dict[str, Any] = {}
        if hasattr(anthropic, "DefaultAioHttpClient"):
            kw["http_client"] = anthropic.DefaultAioHttpClient(timeout=connection.timeout)
        self._client = anthropic.AsyncAnthropic(
            api_key=key or "",  # "": no env lookup; no key: never sent (_headers)
            base_url=connection.base_url or ANTHROPIC_URL,  # not the SDK's ANTHROPIC_BASE_URL, nor its key there
            timeout=connection.timeout,
            max_retries=0,
            **kw,
        )
        self._refusals = Refusals(self.name, messages_body, SAMPLING)

    async def complete(self, request: ChatRequest) -> ChatResult:
        data, latency = await self._refusals.send_sdk(request, anthropic, self._send)
        return answer(messages_result(data, latency), self.name)

    async def _send(self, body: dict[str, Any]) -> tuple[Any, float]:
        """The reply's JSON and its seconds."""
        t0 = time.perf_counter()
        raw = await self._client.messages.with_raw_response.create(**body, **self._headers)
        return json.loads(raw.http_response.content), time.perf_counter() - t0

    async def aclose(self) -> None:
        await self._client.close()


class AnthropicBatchAPI(batch_api.BatchWire):
    """Anthropic's Message Batches (``messages.batches``; custom_id ``^[a-zA-Z0-9_-]{1,64}$``)."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, connection: Connection) -> None:
        super().__init__(connection)
        key = connection_key("anthropic", connection)
        # no key: none sent, on every request (results() sets headers of its own)
        omit = {} if key else {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}
        self._client = anthropic.AsyncAnthropic(api_key=key or "", base_url=connection.base_url or ANTHROPIC_URL,
                                                timeout=connection.timeout, max_retries=3,
                                                # the stub says str; the client's header layers drop an Omit()
                                                default_headers=omit)  # type: ignore[arg-type]
        self.refusals = Refusals(self.name, messages_body, SAMPLING)
        self._once = self._client.with_options(max_retries=0)

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        params = self.refusals.body(request)
        params.update(params.pop("extra_body", {}))  # what the SDK would put at the body's top level
        return {"custom_id": custom_id, "params": params}

    async def check(self) -> None:
        try:
            await self._client.messages.batches.list(limit=1)
        except anthropic.APIError as e:
            raise self.unavailable(sdk_error(anthropic, e, self.name)) from None

    async def submit(self, entries: list[dict[str, Any]], intent: str) -> str:
        try:  # Message Batches take no metadata: ``find`` knows the batch by its size and time
            b = await self._once.messages.batches.create(requests=entries)  # type: ignore[arg-type]
        except anthropic.APIError as e:
            raise batch_api.create_error(sdk_error(anthropic, e, self.name)) from None
        return b.id

    async def find(self, intent: str, requests: int, at: datetime, known: set[str]) -> str | None:
        """Of the batches of ``requests`` rows that are not ``known`` (listed newest first: read back to
        ``at``), the one created nearest ``at``; its results' custom_ids confirm it when it ends (a call
        it has no row for goes again)."""
        found: dict[str, float] = {}  # id -> seconds from the intent
        try:
            async for b in self._client.messages.batches.list(limit=100):
                if b.created_at < at - timedelta(seconds=batch_api.CLOCK_SKEW_S):
                    break
                c = b.request_counts
                if c.processing + c.succeeded + c.errored + c.canceled + c.expired == requests and b.id not in known:
                    found[b.id] = abs((b.created_at - at).total_seconds())
        except anthropic.APIError as e:
            raise sdk_error(anthropic, e, self.name) from None
        return min(found, key=found.__getitem__, default=None)

    async def status(self, batch_id: str) -> batch_api.BatchStatus:
        try:
            b = await self._client.messages.batches.retrieve(batch_id)
        except anthropic.APIError as e:
            raise sdk_error(anthropic, e, self.name) from None
        c = b.request_counts
        return batch_api.BatchStatus(b.processing_status, c.succeeded, c.errored + c.canceled + c.expired)

    async def results(self, batch_id: str) -> AsyncIterator[batch_api.Row]:
        try:  # the file as written: the SDK's reader stops at the first line it cannot read
            raw = await self._client.messages.batches.with_raw_response.results(batch_id)
            text = (await raw.read()).decode("utf-8", errors="replace")
        except anthropic.APIError as e:
            raise sdk_error(anthropic, e, self.name) from None
        for row in batch_api.read_rows(text, lambda line: self._outcome(line["result"]), f"anthropic batch {batch_id} results"):
            yield row

    def _outcome(self, result: dict[str, Any]) -> batch_api.Outcome:
        kind = result.get("type")
        if kind == "succeeded":
            try:
                return answer(messages_result(result["message"], 0.0), self.name)
            except ProviderError as e:
                return e
        if kind == "errored":
            error = (result.get("error") or {}).get("error") or {}
            status = _STATUS.get(error.get("type", ""), 500)
            message = f"anthropic batch row {error.get('type')}: {error.get('message', '')}"
            return batch_api.RowRefused(message, error) if status == 400 else classify_status(status, message)
        return ServerError(f"anthropic batch row: {kind}")

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.messages.batches.cancel(batch_id)
        except anthropic.APIError as e:
            raise sdk_error(anthropic, e, self.name) from None

    async def aclose(self) -> None:
        await self._client.close()


def not_found(error: BaseException, where: str) -> str:
    return (f"{where}/v1/messages not found (HTTP 404): this server does not speak the Anthropic "
            f"format; for an OpenAI-compatible server use openai/MODEL")


MODES = ProviderModes("ANTHROPIC", {
    "tools": ("TOOLS", "a forced tool_use whose input_schema is the schema"),
    "md_json": ("JSON", "the schema in the system prompt, the JSON in the reply's text"),
}, anthropic_reply)
WIRE = ProviderSpec("anthropic", AnthropicProvider, MODES,
                    key_env=("ANTHROPIC_API_KEY",), base_url=ANTHROPIC_URL, call_path="/v1/messages",
                    batch=AnthropicBatchAPI, not_found=not_found)
