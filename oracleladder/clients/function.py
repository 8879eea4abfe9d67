"""A Python function as a model (``python/NAME``): a student or teacher already loaded in the user's
process (a transformers pipeline, a vLLM ``LLM``, a Tinker sampling client), asked through the
toolkit's ``Client`` like any endpoint, so the cache, the claims, the budget, the progress and the
errors work unchanged.

The function takes the call's messages and its parameters (temperature, max_tokens, ...; copies: the
request is the call's key) and returns the reply's text, or ``(text, {"tokens_in": N, "tokens_out":
N})``; an async function is awaited, a plain one runs in a daemon thread of its own. What it raises,
``SystemExit`` and ``KeyboardInterrupt`` included, is a failed call (``errors.function_error``), never
an answer, and never the end of the run. Each call runs under the endpoint's timeout: past it, an async
function is cancelled and a plain one abandoned (Python cannot stop a thread: it runs on, ignored, and
does not keep the process from exiting), and the call fails, not retried (``FunctionTimeout``). Its
calls are keyed by the model's name and the version the user gives (``cache_tag``): the toolkit cannot
see a function's code change. Declared as the python/ wire (``WIRE``).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .base import ChatRequest, ChatResult
from .errors import (
    ConfigurationError,
    FunctionFailed,
    FunctionTimeout,
    ProviderError,
    function_error,
)
from .openai_api import PROMPT_MODES
from .providers import DEFAULT_TIMEOUT_S
from .registry import Connection, ProviderSpec
from .structured import wire_body
from .usage import token_count

# (messages, params) -> text | (text, usage), or an awaitable of it
ModelFunction = Callable[[list[dict[str, str]], dict[str, Any]], Any]
USAGE_FIELDS = ("tokens_in", "tokens_out")


class FunctionProvider:
    """The wire of a model function: each call is one call of the function."""

    name = "python"
    endpoint: str | None = None  # in this process: no server's address

    def __init__(self, function: ModelFunction, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        try:
            inspect.signature(function).bind(None, None)
        except TypeError:
            raise ConfigurationError(f"a model function takes (messages, params); "
                                     f"{getattr(function, '__name__', function)!r} does not") from None
        except ValueError:  # a builtin without a signature: it is called as it is
            pass
        self._function = function
        self._timeout = timeout
        self._async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None))  # noqa: B004 (an object whose __call__ is async)

    async def complete(self, request: ChatRequest) -> ChatResult:
        name = f"python/{request.model}"
        # a structured call's messages as its mode writes them (the schema in the prompt); copies throughout
        asked = request.messages if request.mode is None else wire_body(request, {"messages": request.messages})["messages"]
        messages, params = copy.deepcopy(asked), copy.deepcopy(request.params)
        t0 = time.perf_counter()
        # the call runs in a task or a thread of its own, which catches what the function raises: a
        # SystemExit or KeyboardInterrupt is this call's failure, and does not stop the event loop
        called = (asyncio.ensure_future(self._awaited(messages, params, name)) if self._async
                  else _in_thread(self._function, messages, params, name))
        try:
            done, _ = await asyncio.wait({called}, timeout=self._timeout)
        finally:
            if not called.done():  # past the timeout, or this call cancelled: not waited for (a task
                called.cancel()    # that ignores its cancellation is left behind, as a thread is)
        if not done:
            raise FunctionTimeout(f"{name} ran past its timeout of {self._timeout:g} s"
                                  + ("" if self._async else " (its thread is left running, abandoned)"))
        return _result(called.result(), name, time.perf_counter() - t0)

    async def _awaited(self, messages: list[dict[str, Any]], params: dict[str, Any], name: str) -> Any:
        try:
            return await self._function(messages, params)
        except (ProviderError, asyncio.CancelledError):
            raise
        except BaseException as e:
            raise function_error(e, name) from e

    async def aclose(self) -> None:
        pass


def _in_thread(function: ModelFunction, messages: list[dict[str, Any]], params: dict[str, Any],
               name: str) -> asyncio.Future[Any]:
    """``function(messages, params)`` in a daemon thread of its own: the loop's thread pool would keep a
    hung function's thread, and the process, alive at exit (asyncio.run and the interpreter join it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(reply: Any, error: BaseException | None) -> None:
        if future.done():  # timed out and abandoned
            return
        if error is None:
            future.set_result(reply)
        else:
            future.set_exception(error)

    def run() -> None:
        try:
            reply, error = function(messages, params), None
        except BaseException as e:
            # a ProviderError as it is: a function may say what failed in the toolkit's terms (a 429)
            reply, error = None, e if isinstance(e, ProviderError) else function_error(e, name)
        try:
            loop.call_soon_threadsafe(settle, reply, error)
        except RuntimeError:  # the loop closed while an abandoned function ran on
            pass

    threading.Thread(target=run, name=f"oracleladder-function-{getattr(function, '__name__', 'model')}",
                     daemon=True).start()
    return future


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


def _provider(connection: Connection) -> FunctionProvider:
    if connection.function is None:
        raise ConfigurationError("a python/ model is a Python function, given through the Python API "
                                 "(Experiment.probe(student=fn, name=...))")
    return FunctionProvider(connection.function, timeout=connection.timeout)


# a Python function gets the messages alone: the schema in the prompt
WIRE = ProviderSpec("python", _provider, PROMPT_MODES, function=True, free="a Python function")
