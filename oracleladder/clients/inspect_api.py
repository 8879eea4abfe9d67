"""inspect_ai's model providers as a wire (``inspect/PROVIDER/MODEL``: ``inspect/bedrock/...``,
``inspect/hf/...``, ``inspect/mockllm/model``): each call is one ``Model.generate`` of inspect_ai's
model API, asked through the toolkit's ``Client`` like any endpoint, so the cache, the claims, the
budget, the concurrency, the retries and the store work unchanged.

inspect_ai's own retries and cache are off (``max_retries=0``, ``cache=False``) and its concurrency
is left wide: the toolkit retries, caches and limits each call once, above the wire. Whether a
failure is worth a retry is inspect_ai's provider's word (``Model.should_retry``), an HTTP status
classified as every wire's. A structured call puts the schema in the prompt (mode md_json): inspect_ai's
providers differ in the structured output they take, and every one takes a prompt. Its calls are keyed
as every wire's, by the logical request (provider ``inspect``, model ``PROVIDER/MODEL``). Declared as
the inspect/ wire (``WIRE``): it takes no key of its own (inspect_ai's provider reads its own) and has
no URL of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from .base import ChatRequest, ChatResult
from .errors import (
    BadRequestError,
    ConfigurationError,
    ConnectionDropped,
    PermanentError,
    ProviderError,
    RequestTimeout,
    ServerError,
    classify_status,
    excerpt,
)
from .openai_api import PROMPT_MODES
from .providers import DEFAULT_TIMEOUT_S
from .registry import Connection, ProviderSpec
from .structured import wire_body
from .usage import token_count
from .wire import answer

if TYPE_CHECKING:
    import inspect_ai.model as inspect_model
    import tenacity
else:  # the optional extra [inspect]: loaded by the first inspect/ model, not by `ladder --help`
    inspect_model = lazy_module("inspect_ai.model")
    tenacity = lazy_module("tenacity")

INSTALL = "pip install 'oracleladder[inspect]'"
# inspect_ai's connections per model: wide, so the toolkit's own concurrency is the one that holds
_CONNECTIONS = 10_000
_ROLES = {"system": "ChatMessageSystem", "user": "ChatMessageUser", "assistant": "ChatMessageAssistant"}


class InspectProvider:
    """The wire of one inspect_ai model: ``model`` as inspect_ai names it (``mockllm/model``),
    ``model_args`` its constructor's arguments (inspect's ``-M``), ``base_url`` its server."""

    name = "inspect"
    endpoint: str | None = None  # inspect_ai's provider knows its server; the call key names the model

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 model_args: Mapping[str, Any] | None = None) -> None:
        try:
            self._model = inspect_model.get_model(model, base_url=base_url, memoize=False, **dict(model_args or {}))
        except ImportError:
            raise ConfigurationError(f"inspect/{model} is asked through inspect_ai, not installed: {INSTALL}") from None
        except Exception as e:  # an unknown provider, a missing key or package: said by inspect_ai
            raise ConfigurationError(f"inspect/{model}: inspect_ai cannot make it: {excerpt(str(e), 300)}") from None
        self.model = model
        self._timeout = max(1, round(timeout))

    async def complete(self, request: ChatRequest) -> ChatResult:
        name = f"inspect/{request.model}"
        # a structured call's messages as its mode writes them (the schema in the prompt)
        asked = request.messages if request.mode is None else wire_body(request, {"messages": request.messages})["messages"]
        config = _config(request.params, name, self._timeout)
        t0 = time.perf_counter()
        try:
            output = await self._model.generate(_messages(asked, name), config=config, cache=False)
        except Exception as e:
            raise _error(self._model, e, name) from e
        usage = output.usage
        result = ChatResult(text=output.completion, finish_reason=output.stop_reason,
                            latency_s=time.perf_counter() - t0, metered=usage is not None,
                            tokens_in=token_count(usage.input_tokens, "tokens_in") if usage else 0,
                            tokens_out=token_count(usage.output_tokens, "tokens_out") if usage else 0)
        return answer(result, name)

    async def aclose(self) -> None:
        await self._model.api.aclose()


def _config(params: Mapping[str, Any], name: str, timeout: int) -> Any:
    """The call's parameters as inspect_ai's GenerateConfig (``extra_body`` its own field); a
    parameter it has no field for is refused, never dropped."""
    fields = inspect_model.GenerateConfig.model_fields
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise BadRequestError(f"{name}: inspect_ai's GenerateConfig has no parameter {unknown[0]!r}")
    return inspect_model.GenerateConfig(**params, max_retries=0, attempt_timeout=timeout,
                                        max_connections=_CONNECTIONS)


def _messages(messages: list[dict[str, Any]], name: str) -> list[Any]:
    """The toolkit's chat messages as inspect_ai's."""
    made = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES or not isinstance(content, str):
            raise BadRequestError(f"{name}: a {role!r} message with {type(content).__name__} content is not "
                                  "one inspect_ai's chat takes here")
        made.append(getattr(inspect_model, _ROLES[role])(content=content))
    return made


def _error(model: Any, e: Exception, name: str) -> ProviderError:
    """The toolkit's error for what inspect_ai's ``generate`` raised: an HTTP status as every wire's,
    else a retry where inspect_ai's provider would retry, else a failed call."""
    if isinstance(e, tenacity.RetryError) and e.last_attempt.exception() is not None:
        e = e.last_attempt.exception()  # type: ignore[assignment]
    cause = e.__cause__ if isinstance(e.__cause__, Exception) else e  # inspect's ModelGenerateError wraps it
    message = f"{name} raised {type(cause).__name__}: {excerpt(str(cause), 300)}"
    status = next((v for v in (getattr(x, a, None) for x in (e, cause) for a in ("status_code", "code"))
                   if isinstance(v, int) and not isinstance(v, bool) and 100 <= v < 600), None)
    if status is not None:
        return classify_status(status, message, body=str(cause))
    if isinstance(cause, TimeoutError):
        return RequestTimeout(message)
    if isinstance(cause, ConnectionError):
        return ConnectionDropped(message)
    return ServerError(message) if model.should_retry(cause) else PermanentError(message)


def _provider(connection: Connection) -> InspectProvider:
    return InspectProvider(connection.model or "", base_url=connection.base_url, timeout=connection.timeout)


WIRE = ProviderSpec("inspect", _provider, PROMPT_MODES)
