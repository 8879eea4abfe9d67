"""A Python function as a model (``python/NAME``): a student or teacher already loaded in the user's
process (a transformers pipeline, a vLLM ``LLM``, a Tinker sampling client), asked through the
toolkit's ``Client`` like any endpoint, so the cache, the claims, the budget, the progress and the
errors work unchanged.

The function takes the call's messages and its parameters (temperature, max_tokens, ...; copies: the
request is the call's key) and returns the reply's text, or ``(text, {"tokens_in": N, "tokens_out":
N})``; an async function is awaited, a plain one runs in the event loop's thread pool. What it raises
is a failed call (``errors.function_error``), never an answer. Its calls are keyed by the model's
name and the version the user gives (``cache_tag``): the toolkit cannot see a function's code change.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any

from .base import ChatRequest, ChatResult
from .errors import ConfigurationError, FunctionFailed, ProviderError, function_error
from .structured import wire_body
from .usage import token_count

# (messages, params) -> text | (text, usage), or an awaitable of it
ModelFunction = Callable[[list[dict[str, str]], dict[str, Any]], Any]
USAGE_FIELDS = ("tokens_in", "tokens_out")


class FunctionProvider:
    """The wire of a model function: each call is one call of the function."""

    name = "python"
    endpoint = None  # in this process: no server's address

    def __init__(self, function: ModelFunction) -> None:
        try:
            inspect.signature(function).bind(None, None)
        except TypeError:
            raise ConfigurationError(f"a model function takes (messages, params); "
                                     f"{getattr(function, '__name__', function)!r} does not") from None
        except ValueError:  # a builtin without a signature: it is called as it is
            pass
        self._function = function
        self._async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None))

    async def complete(self, request: ChatRequest) -> ChatResult:
        name = f"python/{request.model}"
        # a structured call's messages as its mode writes them (the schema in the prompt); copies throughout
        asked = request.messages if request.mode is None else wire_body(request, {"messages": request.messages})["messages"]
        messages, params = copy.deepcopy(asked), copy.deepcopy(request.params)
        t0 = time.perf_counter()
        try:
            if self._async:
                reply = await self._function(messages, params)
            else:
                reply = await asyncio.to_thread(self._function, messages, params)
        except ProviderError:  # a function may say what failed in the toolkit's terms (a 429 to cool down)
            raise
        except Exception as e:
            raise function_error(e, name) from e
        return _result(reply, name, time.perf_counter() - t0)

    async def aclose(self) -> None:
        pass


def _result(reply: Any, name: str, latency: float) -> ChatResult:
    """The function's reply as a ChatResult: its text counted at its bound (``metered=False``), or
    its text and its usage."""
    if isinstance(reply, str):
        return ChatResult(text=reply, latency_s=latency, metered=False)
    if (isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], str)
            and isinstance(reply[1], Mapping) and all(isinstance(reply[1].get(f), int) for f in USAGE_FIELDS)):
        text, usage = reply
        return ChatResult(text=text, tokens_in=token_count(usage["tokens_in"], "tokens_in"),
                          tokens_out=token_count(usage["tokens_out"], "tokens_out"), latency_s=latency)
    raise FunctionFailed(f"{name} returned {type(reply).__name__}, not its text nor (text, "
                         "{'tokens_in': N, 'tokens_out': N})")
