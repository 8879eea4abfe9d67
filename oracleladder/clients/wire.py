"""What every HTTP wire shares (``openai_api``, ``anthropic_api``, ``compatible``, and their batch
APIs): the parameters a model refuses, learned from its refusals, and the check that a server's 200
holds an answer.

A wire makes exactly one HTTP request per ``complete`` call (SDK retries are disabled) and maps its
failures to :mod:`oracleladder.clients.errors`; retries, limits and the cache live in the runner.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .base import ChatRequest, ChatResult
from .errors import EmptyCompletion, sdk_error

T = TypeVar("T")

log = logging.getLogger(__name__)


class Refusals:
    """Parameters a model has refused, learned from the refusal itself.

    Newer models refuse parameters older ones took, with an HTTP 400: OpenAI's reasoning models
    (gpt-5, the o-series) ``max_tokens`` (they take ``max_completion_tokens``) and any
    ``temperature`` or ``top_p`` but the default, naming the parameter; Anthropic's newest (Opus
    4.7 on) ``temperature``, ``top_p`` and ``top_k``, saying it "is deprecated for this model".
    The wire then sends that model's requests without it (the token budget renamed) and
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

    async def send_sdk(self, request: ChatRequest, sdk: Any, send: Callable[[dict[str, Any]], Awaitable[T]]) -> T:
        """What ``send`` answers to ``request``'s body through the SDK module ``sdk``: re-sent without
        each parameter the model refuses (``learn``); any other SDK error, or a reply that is not
        JSON, as a ProviderError (``errors.sdk_error``)."""
        while True:  # at most once more per refusable parameter: each is learned once
            body = self.body(request)
            try:
                return await send(body)
            except (sdk.APIError, ValueError) as e:
                if isinstance(e, sdk.APIStatusError) and self.learn(request.model, body, e.status_code, e.body):
                    continue
                raise sdk_error(sdk, e, self.provider) from None

    def learn_request(self, request: ChatRequest, error: Any) -> bool:
        """``learn`` from a 400 refusing ``request`` as first built (a batch row's)."""
        return self.learn(request.model, self._build(request), 400, error)


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


def answer(result: ChatResult, provider: str) -> ChatResult:
    """``result``, unless the server sent no answer at all (EmptyCompletion, retried). An empty text
    cut off by its token budget is an answer (a reasoning model spent the budget thinking). Only
    wire providers check this: the in-process ``local`` model has no outage, its empty text is its answer."""
    if not result.text.strip() and not result.truncated:
        raise EmptyCompletion(f"{provider} returned an empty completion (finish reason "
                              f"{result.finish_reason!r}, {result.tokens_out} tokens out)")
    return result
