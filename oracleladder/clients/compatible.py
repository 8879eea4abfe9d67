"""OpenAI's chat-completions wire, which OpenAI-compatible servers (vLLM, SGLang, llama.cpp, Ollama,
gateways) speak: its body and its reply (which the SDK transport, ``openai_api``, sends and reads
too), and the wire over a bare ``aiohttp`` session, at about a third of the SDK's CPU per call, which
counts against a fast local server at high concurrency (``transport="aiohttp"``, the default for a
``base_url``); the models a server lists; what an HTTP 404 there means."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from ..schemas.calls import served_identity
from .base import ChatRequest, ChatResult
from .errors import (
    CannotConnect,
    ConnectionDropped,
    MalformedResponse,
    RequestTimeout,
    classify_status,
    excerpt,
    parse_retry_after,
    scrub,
)
from .providers import connection_key, endpoint_of
from .registry import Connection
from .structured import wire_body
from .usage import token_count
from .wire import Refusals, answer

if TYPE_CHECKING:
    import aiohttp
else:  # loaded by the first request, not by `ladder --help` (0.2 to 0.5 s on a loaded 2-core machine)
    aiohttp = lazy_module("aiohttp")

OPENAI_URL = "https://api.openai.com/v1"
# params that go straight through to the chat-completions body
CHAT_PARAMS = {
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "n",
    "presence_penalty", "frequency_penalty", "logit_bias", "reasoning_effort", "response_format",
    "top_k", "min_p", "repetition_penalty", "tools", "tool_choice",
}
REFUSABLE = {"max_tokens", "temperature", "top_p"}  # what a newer model may refuse (wire.Refusals)


def chat_body(request: ChatRequest) -> dict[str, Any]:
    """The chat-completions body as it goes on the wire (a structured call's as its mode builds it);
    ``extra_body`` fields at its top level."""
    body: dict[str, Any] = {"model": request.model, "messages": request.messages}
    for k, v in request.params.items():
        if k in CHAT_PARAMS:
            body[k] = v
    body.update(request.params.get("extra_body") or {})
    return body if request.mode is None else wire_body(request, body)


def reply_text(message: dict[str, Any]) -> Any:
    """The reply a chat-completions message holds: its text, or, when it has none but a tool call,
    that call's arguments (mode tools asks for its reply as a forced call; no other request asks
    for a tool, so a message is read without its mode)."""
    text = message["content"]
    calls = message.get("tool_calls")
    if not text and calls:
        return calls[0]["function"]["arguments"]
    return text


def chat_result(data: Any, latency: float) -> ChatResult:
    """A chat-completions reply body as a ChatResult (MalformedResponse if it is not one)."""
    try:
        choice = data["choices"][0]
        text = reply_text(choice["message"])
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        usage = data.get("usage") or {}
        tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
        finish_reason = choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        raise MalformedResponse(f"malformed chat-completions body: {e!r}") from None
    return ChatResult(text=text, tokens_in=token_count(tokens_in, "prompt_tokens"),
                      tokens_out=token_count(tokens_out, "completion_tokens"), latency_s=latency,
                      finish_reason=finish_reason, metered=tokens_in is not None and tokens_out is not None)


class OpenAIRawProvider:
    """OpenAI chat-completions over a bare ``aiohttp`` session: the lowest-overhead transport."""

    def __init__(self, connection: Connection, *, name: str = "openai", connection_limit: int = 0) -> None:
        self.name = name
        self.base_url = (connection.base_url or OPENAI_URL).rstrip("/")
        self.endpoint = endpoint_of("openai", connection.base_url)
        self._url = self.base_url + "/chat/completions"
        key = connection_key("openai", connection)
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self._timeout = connection.timeout
        self._limit = connection_limit
        self._session: Any = None
        self._refusals = Refusals(name, chat_body, REFUSABLE)
        self._spelled: dict[str, str] = {}  # a served model's identity -> this server's name for it

    def _get_session(self) -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit),
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            )
        return self._session

    async def served_models(self) -> list[str]:
        """The models the server lists at ``/models`` by their identity (`served_identity`; [] if it
        lists none or cannot say); a request for one carries the server's own name for it."""
        try:
            async with self._get_session().get(self.base_url + "/models", headers=self._headers) as resp:
                data = await resp.json(content_type=None) if resp.status == 200 else {}
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return []
        listed = data.get("data") if isinstance(data, dict) else None
        ids = [m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)] if isinstance(listed, list) else []
        self._spelled = {served_identity(i): i for i in ids}
        return list(self._spelled)

    async def complete(self, request: ChatRequest) -> ChatResult:
        session = self._get_session()
        spelled = self._spelled.get(request.model, request.model)
        if spelled != request.model:  # the key names the model by its identity, the body as the server does
            request = request.model_copy(update={"model": spelled})
        while True:  # at most once more per refusable parameter: each is learned once
            body = self._refusals.body(request)
            payload = json.dumps(body, ensure_ascii=False).encode()
            t0 = time.perf_counter()
            try:
                async with session.post(self._url, data=payload, headers=self._headers) as resp:
                    raw = await resp.read()
                    status = resp.status
                    retry_after = resp.headers.get("Retry-After")
            except asyncio.TimeoutError:
                raise RequestTimeout(f"request timed out after {self._timeout:g} s") from None
            except aiohttp.ClientConnectorError as e:
                raise CannotConnect(f"cannot connect to {self.base_url}: {type(e).__name__}") from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as e:
                raise ConnectionDropped(f"connection failed: {type(e).__name__}") from None
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
            if status >= 400:
                if self._refusals.learn(request.model, body, status, data):
                    continue
                text = raw.decode(errors="replace")
                raise classify_status(status, f"{self.name} HTTP {status}: {_error_text(data, text)}",
                                      parse_retry_after(retry_after), body=scrub(text))
            if data is None:
                raise MalformedResponse("malformed body: not JSON")
            return answer(chat_result(data, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _error_text(data: Any, text: str) -> str:
    """An error body's message (the JSON error's own, if any) on one line, at most 200 characters."""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return excerpt(" ".join(str(message or text).split()))


def not_found(error: BaseException, where: str) -> str:
    """The line for an HTTP 404 at the chat-completions server ``where``: its URL, else its model."""
    if not where.endswith("/v1"):
        return f"{where}/chat/completions not found (HTTP 404): did you mean {where}/v1 ?"
    return f"{where}/chat/completions: {error} (check the model name: --model-name)"
