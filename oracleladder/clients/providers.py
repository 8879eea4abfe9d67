"""Concrete providers: OpenAI (official SDK, aiohttp transport), Anthropic (official SDK), any
OpenAI-compatible server via ``base_url`` (bare aiohttp by default, or the SDK), and the embedded
``local``.

Providers make exactly one HTTP request per ``complete`` call (SDK retries are disabled) and map
failures to :mod:`oracleladder.clients.errors`; retries, limits and the cache live in the runner.
API keys are held only by the provider objects: never logged, never put in a ChatRequest.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._lazy import lazy_module
from .base import ChatRequest, ChatResult, Provider
from .errors import (
    CannotConnect,
    ConnectionDropped,
    EmptyCompletion,
    MalformedResponse,
    MissingAPIKey,
    RequestTimeout,
    UnknownProvider,
    classify_status,
    parse_retry_after,
    register_secret,
    scrub,
)
from .local import LocalProvider
from .structured import reply_text

if TYPE_CHECKING:
    import aiohttp
    import anthropic
    import openai
else:  # loaded by the first provider that uses them, not by `ladder --help`: on a loaded 2-core machine
    # openai takes 1 to 1.6 s to import, anthropic 3 to 3.6 s, aiohttp 0.2 to 0.5 s
    aiohttp = lazy_module("aiohttp")
    anthropic = lazy_module("anthropic")
    openai = lazy_module("openai")

KNOWN_PROVIDERS = ["openai", "anthropic", "local"]
TRANSPORTS = ("auto", "sdk", "aiohttp")
API_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_LOCAL_MODEL = "smollm2-135m-instruct"
DEFAULT_ANTHROPIC_MAX_TOKENS = 1024
DEFAULT_TIMEOUT_S = 120.0
log = logging.getLogger(__name__)

# params that go straight through to the OpenAI chat-completions body
_OPENAI_PARAMS = {
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "n",
    "presence_penalty", "frequency_penalty", "logit_bias", "reasoning_effort", "response_format",
    "top_k", "min_p", "repetition_penalty", "tools", "tool_choice",
}
_OPENAI_REFUSABLE = {"max_tokens", "temperature", "top_p"}  # what a newer model may refuse (_Refusals)
_ANTHROPIC_PARAMS = {"max_tokens", "stop_sequences", "thinking"}
# The SDK (1.0 on) has no keyword for these any more and takes them through extra_body: same wire.
# They are also what Anthropic's newest models refuse (_Refusals).
_ANTHROPIC_SAMPLING = {"temperature", "top_p", "top_k"}


def parse_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-5.4" -> ("openai", "gpt-5.4")``; ``"local" -> ("local", default model)``.

    Only the first ``/`` splits, so ``"openai/meta-llama/Llama-3-8B"`` keeps the HF-style model id.
    """
    model = (model or "").strip()
    if not model:
        raise UnknownProvider("", KNOWN_PROVIDERS)
    provider, sep, name = model.partition("/")
    provider = provider.lower()
    if provider not in KNOWN_PROVIDERS:
        raise UnknownProvider(provider, KNOWN_PROVIDERS)
    if not name:
        if provider == "local":
            return "local", DEFAULT_LOCAL_MODEL
        raise UnknownProvider(f"{model} (no model name after '{provider}/')", KNOWN_PROVIDERS)
    return provider, name


def normalize_base_url(url: str) -> str:
    """``HTTP://Host:80/v1/`` -> ``http://host/v1``: one spelling per server, for the call key."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = (parts.hostname or "").lower()
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(scheme):
        netloc += f":{parts.port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def endpoint_of(provider: str, base_url: str | None) -> str | None:
    """The endpoint a call key names: None for the provider's own default (keys stay as they were)."""
    if base_url is None:
        return None
    url = normalize_base_url(base_url)
    return None if url == normalize_base_url(DEFAULT_BASE_URLS[provider]) else url


def _resolve_key(provider: str, api_key: str | None, base_url: str | None, api_key_env: str | None) -> str | None:
    """This endpoint's key: ``api_key``, else the variable ``api_key_env`` names, else the
    provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY), but only for the provider's own
    host: a key is never handed to another server unless the user names it for that server.
    None: send no key at all (an OpenAI-compatible server that needs none)."""
    if api_key:
        register_secret(api_key)  # some gateways echo the key in their error bodies
        return api_key
    env = key_env_for(provider, base_url, api_key_env)
    if env is None:
        return None
    key = os.environ.get(env)
    if not key:
        raise MissingAPIKey(provider, env)
    register_secret(key)
    return key


def key_env_for(provider: str, base_url: str | None, api_key_env: str | None) -> str | None:
    """The variable this endpoint's key comes from: the one named, else the provider's own for its
    own host, else none."""
    if api_key_env:
        return api_key_env
    if base_url is not None and urlsplit(base_url.strip()).hostname != urlsplit(DEFAULT_BASE_URLS[provider]).hostname:
        return None
    return API_KEY_ENV.get(provider)


def _openai_body(request: ChatRequest) -> dict[str, Any]:
    """The chat-completions body as it goes on the wire; ``extra_body`` fields at its top level."""
    body: dict[str, Any] = {"model": request.model, "messages": request.messages}
    for k, v in request.params.items():
        if k in _OPENAI_PARAMS:
            body[k] = v
    body.update(request.params.get("extra_body") or {})
    return body


class _Refusals:
    """Parameters a model has refused, learned from the refusal itself.

    Newer models refuse parameters older ones took, with an HTTP 400: OpenAI's reasoning models
    (gpt-5, the o-series) ``max_tokens`` (they take ``max_completion_tokens``) and any
    ``temperature`` or ``top_p`` but the default, naming the parameter; Anthropic's newest (Opus
    4.7 on) ``temperature``, ``top_p`` and ``top_k``, saying it "is deprecated for this model".
    The provider then sends that model's requests without it (the token budget renamed) and
    re-sends at once: a refused request is not billed. The call's cache key is unchanged, and a
    warning says once per model and parameter what is no longer sent.
    """

    def __init__(self, provider: str, build: Callable[[ChatRequest], dict[str, Any]], refusable: set[str]) -> None:
        self.provider = provider
        self._build = build
        self._refusable = refusable
        self._by_model: dict[str, set[str]] = {}

    def body(self, request: ChatRequest) -> dict[str, Any]:
        body = self._build(request)
        for param in self._by_model.get(request.model, ()):
            value = _pop(body, param)
            if param == "max_tokens" and value is not None:
                body["max_completion_tokens"] = value
        return body

    def learn(self, model: str, body: dict[str, Any], status: int, error: Any) -> bool:
        """Whether this error refuses a parameter the model can go without (then re-send)."""
        param = _refused_param(error) if status == 400 else None
        if param not in self._refusable or _get(body, param) is None:
            return False
        refused = self._by_model.setdefault(model, set())
        if param not in refused:  # else a call in flight learned it meanwhile: just re-send
            refused.add(param)
            instead = "max_completion_tokens" if param == "max_tokens" else "the model's default"
            log.warning("%s/%s refuses %s=%r (HTTP 400); its requests go without it from now on: %s",
                        self.provider, model, param, _get(body, param), instead)
        return True  # the next body lacks every refused parameter, so this ends


_DEPRECATED = re.compile(r"`?(\w+)`? is deprecated for this model")


def _refused_param(error: Any) -> str | None:
    """The parameter an error body refuses, if it names one."""
    error = error.get("error", error) if isinstance(error, dict) else None
    if not isinstance(error, dict):
        return None
    if error.get("code") in ("unsupported_parameter", "unsupported_value"):  # OpenAI
        param = error.get("param")
    else:  # Anthropic
        m = _DEPRECATED.search(str(error.get("message", "")))
        param = m.group(1) if m else None
    return param if isinstance(param, str) else None


def _get(body: dict[str, Any], param: str) -> Any:
    return body.get(param, body.get("extra_body", {}).get(param))


def _pop(body: dict[str, Any], param: str) -> Any:
    return body.pop(param, None) if param in body else body.get("extra_body", {}).pop(param, None)


def _answer(result: ChatResult, provider: str) -> ChatResult:
    """``result``, unless the server sent no answer at all (EmptyCompletion, retried). An empty text
    cut off by its token budget is an answer (a reasoning model spent the budget thinking). Only
    wire providers check this: the in-process ``local`` model has no outage, its empty text is its answer."""
    if not result.text.strip() and not result.truncated:
        raise EmptyCompletion(f"{provider} returned an empty completion (finish reason "
                              f"{result.finish_reason!r}, {result.tokens_out} tokens out)")
    return result


def _result_from_openai_dict(data: Any, latency: float) -> ChatResult:
    try:
        choice = data["choices"][0]
        text = reply_text(choice["message"])
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        usage = data.get("usage") or {}
        return ChatResult(
            text=text,
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
        )
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        raise MalformedResponse(f"malformed chat-completions body: {e!r}") from None


def _result_from_anthropic_dict(data: Any, latency: float) -> ChatResult:
    try:
        text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
        usage = data.get("usage") or {}
        return ChatResult(
            text=text,
            tokens_in=int(usage.get("input_tokens") or 0),
            tokens_out=int(usage.get("output_tokens") or 0),
            latency_s=latency,
            finish_reason=data.get("stop_reason"),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise MalformedResponse(f"malformed messages body: {e!r}") from None


class OpenAIProvider:
    """OpenAI or any OpenAI-compatible server, through the official ``AsyncOpenAI`` SDK on aiohttp."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        name: str = "openai",
    ) -> None:
        self.name = name
        self.base_url = base_url
        self.endpoint = endpoint_of("openai", base_url)
        key = _resolve_key("openai", api_key, base_url, api_key_env)
        self._client = openai.AsyncOpenAI(
            api_key=key or "no-key",  # no key: a placeholder the SDK insists on, never sent (_headers)
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(timeout=timeout),
        )
        self._refusals = _Refusals(name, _openai_body, _OPENAI_REFUSABLE)
        self._sdk_params = set(inspect.signature(self._client.chat.completions.create).parameters)
        self._headers = {} if key else {"extra_headers": {"Authorization": openai.Omit()}}

    async def complete(self, request: ChatRequest) -> ChatResult:
        while True:  # at most once more per refusable parameter: each is learned once
            body = self._refusals.body(request)
            # the SDK takes the fields it has no keyword for through extra_body: the same wire
            kwargs = {k: v for k, v in body.items() if k in self._sdk_params}
            extra = {k: v for k, v in body.items() if k not in self._sdk_params}
            t0 = time.perf_counter()
            try:
                raw = await self._client.chat.completions.with_raw_response.create(
                    **kwargs, **({"extra_body": extra} if extra else {}), **self._headers)
                status = raw.http_response.status_code
                data = json.loads(raw.http_response.content)
            except (openai.APIError, ValueError) as e:
                if isinstance(e, openai.APIStatusError) and self._refusals.learn(request.model, body, e.status_code, e.body):
                    continue
                raise _sdk_error(openai, e, self.name) from None
            if status >= 400:
                raise classify_status(status, f"{self.name} HTTP {status}")
            return _answer(_result_from_openai_dict(data, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        await self._client.close()


class OpenAIRawProvider:
    """OpenAI chat-completions over a bare ``aiohttp`` session: the lowest-overhead transport.

    Meant for OpenAI-compatible servers at high concurrency (see docs/PERFORMANCE-NOTES.md).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        name: str = "openai",
        connection_limit: int = 0,
    ) -> None:
        self.name = name
        self.base_url = (base_url or DEFAULT_BASE_URLS["openai"]).rstrip("/")
        self.endpoint = endpoint_of("openai", base_url)
        self._url = self.base_url + "/chat/completions"
        key = _resolve_key("openai", api_key, base_url, api_key_env)
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self._timeout = timeout
        self._limit = connection_limit
        self._session: Any = None
        self._refusals = _Refusals(name, _openai_body, _OPENAI_REFUSABLE)

    def _get_session(self) -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit),
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            )
        return self._session

    async def served_models(self) -> list[str]:
        """The model ids the server lists at ``/models`` ([] if it lists none or cannot say)."""
        try:
            async with self._get_session().get(self.base_url + "/models", headers=self._headers) as resp:
                data = await resp.json(content_type=None) if resp.status == 200 else {}
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return []
        listed = data.get("data") if isinstance(data, dict) else None
        return [m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)] if isinstance(listed, list) else []

    async def complete(self, request: ChatRequest) -> ChatResult:
        session = self._get_session()
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
            return _answer(_result_from_openai_dict(data, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class AnthropicProvider:
    """Anthropic messages API through the official ``AsyncAnthropic`` SDK (aiohttp transport)."""

    name = "anthropic"

    def __init__(
        self, *, api_key: str | None = None, api_key_env: str | None = None, base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.endpoint = endpoint_of("anthropic", base_url)
        key = _resolve_key("anthropic", api_key, base_url, api_key_env)
        omit = {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}
        self._headers = {} if key else {"extra_headers": omit}
        kw: dict[str, Any] = {}
        if hasattr(anthropic, "DefaultAioHttpClient"):
            kw["http_client"] = anthropic.DefaultAioHttpClient(timeout=timeout)
        self._client = anthropic.AsyncAnthropic(
            api_key=key or "",  # "": no env lookup; no key: never sent (_headers)
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            **kw,
        )
        self._refusals = _Refusals(self.name, self.body, _ANTHROPIC_SAMPLING)

    @staticmethod
    def body(request: ChatRequest) -> dict[str, Any]:
        system = [m["content"] for m in request.messages if m.get("role") == "system"]
        msgs = [{"role": m["role"], "content": m["content"]} for m in request.messages if m.get("role") != "system"]
        body: dict[str, Any] = {"model": request.model, "messages": msgs}
        if system:
            body["system"] = "\n\n".join(system)
        for k, v in request.params.items():
            if k in _ANTHROPIC_PARAMS:
                body[k] = v
            elif k in _ANTHROPIC_SAMPLING:
                body.setdefault("extra_body", {})[k] = v
            elif k == "stop":
                body["stop_sequences"] = [v] if isinstance(v, str) else list(v)
        if request.params.get("extra_body"):  # the SDK sends these at the body's top level
            body.setdefault("extra_body", {}).update(request.params["extra_body"])
        body.setdefault("max_tokens", DEFAULT_ANTHROPIC_MAX_TOKENS)
        return body

    async def complete(self, request: ChatRequest) -> ChatResult:
        while True:  # at most once more per refusable parameter: each is learned once
            body = self._refusals.body(request)
            t0 = time.perf_counter()
            try:
                raw = await self._client.messages.with_raw_response.create(**body, **self._headers)
                data = json.loads(raw.http_response.content)
                break
            except (anthropic.APIError, ValueError) as e:
                if isinstance(e, anthropic.APIStatusError) and self._refusals.learn(request.model, body, e.status_code, e.body):
                    continue
                raise _sdk_error(anthropic, e, self.name) from None
        return _answer(_result_from_anthropic_dict(data, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        await self._client.close()


# the SDKs' HTTP layer's names for a connection never made (refused, unknown host, connect timeout)
_CONNECT_ERRORS = ("ConnectError", "ConnectTimeout")


def _sdk_error(sdk: Any, e: Exception, name: str) -> Exception:
    """The provider error for an exception of the OpenAI or the Anthropic SDK (same class names)."""
    if isinstance(e, sdk.APIConnectionError) and type(e.__cause__).__name__ in _CONNECT_ERRORS:
        return CannotConnect("cannot connect")  # no connection at all, as opposed to one dropped or slow
    if isinstance(e, sdk.APITimeoutError):  # before APIConnectionError, its base class
        return RequestTimeout("request timed out")
    if isinstance(e, sdk.APIStatusError):
        ra = parse_retry_after(e.response.headers.get("retry-after")) if e.response is not None else None
        return classify_status(e.status_code, f"{name} HTTP {e.status_code}: {_short(e)}", ra, body=str(e))
    if isinstance(e, sdk.APIConnectionError):
        return ConnectionDropped(f"connection failed: {type(e).__name__}")
    return MalformedResponse(f"malformed body: {type(e).__name__}")


def _error_text(data: Any, text: str) -> str:
    """An error body's message (the JSON error's own, if any) on one line, at most 200 characters."""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return _excerpt(" ".join(str(message or text).split()))


def _short(e: Exception) -> str:
    return _excerpt(str(e), 300)


def _excerpt(text: str, n: int = 200) -> str:
    """The first ``n`` characters of an error body, scrubbed of keys before it is cut (a key cut in
    two would no longer be recognized)."""
    s = scrub(text[: 8 * n])
    return s if len(s) <= n else s[:n] + "..."


async def server_slots(base_url: str, timeout: float = 5.0) -> int | None:
    """How many requests the server at ``base_url`` runs at once, where it says: llama.cpp's
    ``GET /props`` ``total_slots``. None when it does not say (vLLM, SGLang, Ollama, OpenAI): the
    caller keeps its default."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.get(root + "/props") as resp:
                data = await resp.json(content_type=None) if resp.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    slots = data.get("total_slots") if isinstance(data, dict) else None
    return slots if isinstance(slots, int) and slots > 0 else None


def make_provider(
    provider: str,
    *,
    api_key: str | None = None,
    api_key_env: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: str = "auto",
    **local_kwargs: Any,
) -> Provider:
    """Build the provider named ``provider`` ("openai", "anthropic", "local").

    OpenAI transports: ``"sdk"`` (the official SDK), ``"aiohttp"`` (bare aiohttp, about a third of
    the SDK's CPU per call), or ``"auto"``: aiohttp for an OpenAI-compatible server (``base_url``),
    where a fast local server makes the client's CPU the bottleneck, the SDK for OpenAI itself.
    """
    provider = provider.lower()
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; known: {', '.join(TRANSPORTS)}")
    if provider == "openai":
        raw = transport == "aiohttp" or (transport == "auto" and base_url is not None)
        cls = OpenAIRawProvider if raw else OpenAIProvider
        return cls(api_key=api_key, api_key_env=api_key_env, base_url=base_url, timeout=timeout)
    if provider == "anthropic":
        return AnthropicProvider(api_key=api_key, api_key_env=api_key_env, base_url=base_url, timeout=timeout)
    if provider == "local":  # llama.cpp loads with the model, on the first request
        return LocalProvider(**local_kwargs)
    raise UnknownProvider(provider, KNOWN_PROVIDERS)
