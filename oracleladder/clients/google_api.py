"""Google's Gemini API through its SDK (google-genai): ``generateContent`` (``GoogleProvider``).

A ChatRequest becomes the SDK's arguments (``generate_args``): the system messages its
``system_instruction``, the others its ``contents`` (an assistant's turn is the "model" role), the
token budget its ``max_output_tokens``, and a structured call's JSON-schema ``response_format`` its
``response_mime_type`` "application/json" and ``response_schema`` (the schema as instructor's
GENAI_STRUCTURED_OUTPUTS mode gives it, from which the SDK makes Gemini's own). A reply a safety
filter blocked is ``ContentRefused``: a failed call, never an answer. Its batch API is not used.

Install with ``pip install 'oracleladder[google]'``.
"""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .._lazy import lazy_module
from .base import ChatRequest, ChatResult
from .errors import BadRequestError, ConfigurationError, ContentRefused, MalformedResponse, genai_error
from .providers import DEFAULT_BASE_URLS, DEFAULT_TIMEOUT_S, endpoint_of, resolve_key
from .structured import wire_body
from .wire import answer

if TYPE_CHECKING:
    import httpx2
    from google import genai
else:  # an optional extra, loaded by the first google/ client (its package loads its errors and types)
    genai = lazy_module("google.genai")
    httpx2 = lazy_module("httpx2")  # the SDK's HTTP layer

INSTALL_HINT = "pip install 'oracleladder[google]'"
RENAMED = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}  # the toolkit's names, Gemini's
# the finish reasons of a reply a filter blocked (the same request is blocked again)
BLOCKED = {"SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}


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
    tokens_out = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) if usage is not None else 0
    return ChatResult(text="".join(p.text for p in parts if p.text and not p.thought), tokens_in=tokens_in or 0,
                      tokens_out=tokens_out, latency_s=latency, finish_reason=reason.lower() if reason else None,
                      metered=tokens_in is not None)


def _name(value: Any) -> str:
    """An SDK enum's name (or the string the SDK left it as, for a value newer than it)."""
    return str(getattr(value, "value", value))


class GoogleProvider:
    """Gemini's ``generateContent`` through the SDK's async client (``client.aio``), one HTTP request
    per call (the SDK's retries are off: the runner retries)."""

    name = "google"

    def __init__(self, *, api_key: str | None = None, api_key_env: str | None = None, base_url: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint = endpoint_of("google", base_url)
        key = resolve_key("google", api_key, base_url, api_key_env)
        options: dict[str, Any] = {"base_url": base_url or DEFAULT_BASE_URLS["google"],
                                   "timeout": int(timeout * 1000)}  # milliseconds
        if not key:  # the SDK takes a missing key from GEMINI_API_KEY itself: it gets a placeholder, sent empty
            options["headers"] = {"x-goog-api-key": ""}
        try:
            self._client = genai.Client(api_key=key or "no-key", http_options=genai.types.HttpOptions(**options))
        except ImportError:
            raise ConfigurationError(f"google/ models need the google-genai SDK: {INSTALL_HINT}") from None

    async def complete(self, request: ChatRequest) -> ChatResult:
        args = generate_args(request)
        try:
            config = genai.types.GenerateContentConfig(**args.pop("config"))
        except ValidationError as e:  # a parameter Gemini has no field for
            raise BadRequestError(f"google: not a generation config: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}") from None
        t0 = time.perf_counter()
        try:
            response = await self._client.aio.models.generate_content(**args, config=config)
        except (genai.errors.APIError, httpx2.HTTPError, ValueError) as e:  # ValueError: a body it cannot read
            raise genai_error(genai.errors, e, self.name) from None
        return answer(content_result(response, time.perf_counter() - t0), self.name)

    async def aclose(self) -> None:
        await self._client.aio.aclose()
