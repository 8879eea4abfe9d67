"""Structured outputs: a reply parsed into a pydantic model, asked for in one of instructor's modes.

instructor is the mode layer, not the client: each provider's declaration (``registry.ProviderSpec``)
names the instructor modes a structured call can be asked in (strongest first), and a wire builds the
body of such a call with instructor's own handler for its mode (``wire_body``: ``handle_response_model``,
called as a function), then sends it itself (the toolkit's cache, budget, batches and replicas; no patched
client). A call is keyed by its logical request (the caller's messages, the schema, the mode's name:
``ChatRequest.key``), never by the body instructor builds, which changes with its version.

Each reply is validated in one place (``Shape.parse``), by pydantic. One structured call is one
model call: an invalid reply raises ``StructuredOutputError``, whose ``reask()`` gives the messages
that ask again in the mode's own shape (instructor's re-ask handler: an Anthropic tool_use answered
by a tool_result carrying the errors, an OpenAI tool call by a tool message); the compile loop is
the one that asks again, each call a stored attempt.

A provider's modes are its ``registry.ProviderModes``: instructor's name of each mode, and how a
reply of that provider reads as its SDK's response (``openai_reply``, ``anthropic_reply``: what
instructor's re-ask handlers read).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._lazy import lazy_module
from .base import ChatRequest, ChatResult
from .errors import BadRequestError, ConfigurationError
from .registry import WIRES, wire

if TYPE_CHECKING:
    import anthropic
    import instructor
    import instructor.processing.response as instructor_response
    import openai
else:  # instructor loads both SDKs' types: seconds, paid by the first structured call, not by `ladder --help`
    anthropic = lazy_module("anthropic")
    instructor = lazy_module("instructor")
    instructor_response = lazy_module("instructor.processing.response")
    openai = lazy_module("openai")

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


def openai_reply(text: str, request: ChatRequest, finish_reason: str | None) -> Any:
    """A reply as the OpenAI SDK reads it: its text, or in mode tools the forced call's arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if request.mode == "tools":
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_" + _digest(text), "type": "function",
            "function": {"name": _tool_name(request), "arguments": text}}]}
    return openai.types.chat.ChatCompletion.model_validate({
        "id": "reply", "object": "chat.completion", "created": 0, "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or "stop"}]})


def anthropic_reply(text: str, request: ChatRequest, finish_reason: str | None) -> Any:
    """A reply as the Anthropic SDK reads it: its text, or in mode tools the forced tool_use's input."""
    block: dict[str, Any] = {"type": "text", "text": text}
    if request.mode == "tools" and isinstance(tool_input := _object(text), dict):
        block = {"type": "tool_use", "id": "toolu_" + _digest(text), "name": _tool_name(request), "input": tool_input}
    return anthropic.types.Message.model_validate({
        "id": "reply", "type": "message", "role": "assistant", "model": request.model, "content": [block],
        "stop_reason": finish_reason or "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0}})


_NAMES_MODE = re.compile(r"response_format|json_schema|json_object|tool|schema", re.IGNORECASE)
_FENCED = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)
_FLAT = re.compile(r"\{[^{}]*\}")  # a JSON object with no object inside


def _object(text: str) -> Any:
    """``text`` as JSON, None if it is not JSON (a tool_use's input is an object)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _tool_name(request: ChatRequest) -> str:
    return request.response_model.__name__ if request.response_model is not None else "response"


def _instructor_mode(request: ChatRequest) -> dict[str, Any]:
    """instructor's provider and mode of ``request`` (its handler's keywords)."""
    provider = wire(request.provider).modes
    return {"provider": instructor.Provider[provider.provider],
            "mode": instructor.Mode[provider.modes[request.mode or ""][0]]}


# -------------------------------------------------------------------- the body instructor builds
# instructor rebuilds the schema (a new pydantic model) on each call of its handler: some ms of CPU per
# request. Its output for a request whose strings are holes is a template of its output for any
# request of that shape, its strings filled in: the handler runs once per model, mode and shape.
# Roles, block types and empty strings stay: they are what a handler reads (an empty content becomes
# OpenAI's empty list).
_KEPT = frozenset({"role", "type"})
_HOLE = re.compile("\x00(\\d+)\x00")


def _holes(value: Any, leaves: list[str], key: str = "") -> Any:
    """``value`` with each string (but a role or a type) a hole ``\\0N\\0``, N its index in ``leaves``."""
    if isinstance(value, str):
        if key in _KEPT or not value:
            return value
        leaves.append(value)
        return f"\x00{len(leaves) - 1}\x00"
    if isinstance(value, dict):
        return {k: _holes(v, leaves, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_holes(v, leaves) for v in value]
    return value


def _fill(value: Any, leaves: list[str]) -> Any:
    if isinstance(value, str):
        return _HOLE.sub(lambda m: leaves[int(m[1])], value) if "\x00" in value else value
    if isinstance(value, dict):
        return {k: _fill(v, leaves) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, leaves) for v in value]
    return value


@functools.lru_cache(maxsize=256)
def _template(model: type[BaseModel], provider: Any, mode: Any, skeleton: str) -> tuple[dict[str, Any], frozenset[str]]:
    """instructor's body for the request ``skeleton`` (JSON, its strings holes), and its keys that hold one."""
    _, body = instructor_response.handle_response_model(model, mode=mode, provider=provider, **json.loads(skeleton))
    return body, frozenset(k for k, v in body.items() if "\\u0000" in json.dumps(v))


def wire_body(request: ChatRequest, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (what a wire sends for ``request`` without its mode: the messages as the toolkit writes
    them, system ones included, and the parameters) as ``request``'s structured mode sends it: what
    instructor's handler for the mode builds of it. A fresh dict, its dicts fresh too (a wire pops
    refused parameters); the schema's parts are shared, never changed."""
    leaves: list[str] = []
    skeleton = json.dumps(_holes(body, leaves), ensure_ascii=False)
    template, holed = _template(request.response_model, **_instructor_mode(request), skeleton=skeleton)
    return {k: _fill(v, leaves) if k in holed else dict(v) if isinstance(v, dict) else v
            for k, v in template.items()}


# -------------------------------------------------------------------- the reply
class StructuredOutputError(Exception):
    """The model's reply is not a valid ``model``.

    ``raw``: the reply's text as the model wrote it (in mode tools, the forced call's arguments);
    ``errors``: pydantic's errors for it (a reply that is no JSON at all is one ``json_invalid``
    error); ``attempts``: the model calls made (one); ``tokens_in``/``tokens_out``: their usage;
    ``truncated``: the reply was cut off by its token budget (not worth asking again: the same budget
    cuts it off again); ``request``: the request as asked (its messages the caller's, its mode the
    one asked in), so a caller asks again with the messages ``request.messages + error.reask()``."""

    def __init__(self, model: type[BaseModel], request: ChatRequest, reply: ChatResult,
                 error: ValidationError) -> None:
        self.model = model
        self.request = request
        self.raw = reply.text
        self.finish_reason = reply.finish_reason
        self.errors: list[ErrorDetails] = error.errors(include_url=False, include_context=False)
        self.attempts = 1
        self.tokens_in = reply.tokens_in
        self.tokens_out = reply.tokens_out
        self.truncated = reply.truncated
        cut = " (cut off by its token budget)" if self.truncated else ""
        excerpt = self.raw if len(self.raw) <= 200 else self.raw[:200] + "..."
        super().__init__(f"the reply is not a valid {model.__name__}{cut} after {self.attempts} attempt(s): "
                         f"{self.describe()}; reply: {excerpt!r}")

    def describe(self) -> str:
        """The validation errors, one ``where: what`` each."""
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(whole reply)'}: {e['msg']}" for e in self.errors)

    def reask(self) -> list[dict[str, Any]]:
        """The messages that ask again in the mode's own shape (instructor's re-ask handler for it):
        the reply as the provider gave it, then what is wrong with it (``describe``: no pydantic
        version in the words, so the re-ask's key stays)."""
        request = self.request
        reply = wire(request.provider).modes.reply(self.raw, request, self.finish_reason)
        asked = {"messages": copy.deepcopy(request.messages)}
        again = instructor_response.handle_reask_kwargs(asked, response=reply, exception=ValueError(self.describe()),
                                                        **_instructor_mode(request))
        return again["messages"][len(request.messages):]


class Shape(Generic[M]):
    """Replies of ``model``: its JSON schema (made once, shared by every request, never changed) and
    the one place a reply is validated."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self.schema = model.model_json_schema()

    def request(self, request: ChatRequest, mode: str) -> ChatRequest:
        """``request`` asked for a ``model`` in ``mode``."""
        return request.model_copy(update={"response_model": self.model, "response_schema": self.schema,
                                          "mode": mode})

    def parse(self, request: ChatRequest, reply: ChatResult) -> M:
        """The reply to ``request`` as a ``model``, else StructuredOutputError. The JSON is taken
        from a ```json block, else from the first ``{`` to the last ``}``: a model that wraps it in
        words or a fence is not failed for that; where that is no ``model``, the last flat JSON
        object of the reply that is one (a judge that reasons around its verdict, or thinks again
        after a first one)."""
        text = reply.text
        fenced = _FENCED.search(text)
        if fenced:
            text = fenced.group(1)
        else:
            start, end = text.find("{"), text.rfind("}")
            if 0 <= start < end:
                text = text[start:end + 1]
        try:
            return self.model.model_validate_json(text)
        except ValidationError as e:
            for flat in reversed(_FLAT.findall(reply.text)):
                try:
                    return self.model.model_validate_json(flat)
                except ValidationError:
                    continue
            raise StructuredOutputError(self.model, request, reply, e) from None


class Modes:
    """The structured modes a Client asks in, first the one in use. With "auto", a mode the server
    rejects is dropped for the client's endpoint (learned once, said once)."""

    def __init__(self, mode: str, provider: str) -> None:
        known = list(wire(provider).modes.modes) if provider in WIRES else []
        if mode != "auto" and mode not in known:
            every = list(dict.fromkeys(name for other in WIRES for name in wire(other).modes.modes))
            if mode in every:
                raise ConfigurationError(f"{provider} takes structured mode {', '.join(known)} (or auto), not {mode}")
            raise ConfigurationError(f"unknown structured mode {mode!r}; known: auto, " + ", ".join(every))
        self.left = [mode] if mode != "auto" else known

    @property
    def current(self) -> str:
        if not self.left:
            raise ConfigurationError("this provider has no structured modes")
        return self.left[0]

    def rejects(self, mode: str, error: BaseException, where: str) -> bool:
        """Whether ``error`` is the server at ``where`` rejecting ``mode`` and a weaker mode is left;
        then the next one is used from now on."""
        # a rejection names what it rejects: a 400 for, say, a too long prompt must not cost the mode
        if not isinstance(error, BadRequestError) or not _NAMES_MODE.search(str(error)) or len(self.left) < 2:
            return False
        if self.left[0] == mode:  # else a call in flight learned it meanwhile: just re-send
            self.left.pop(0)
            log.warning("%s rejects structured mode %s (%s); its structured calls use %s from now on",
                        where, mode, _first_line(str(error)), self.left[0])
        return True


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."
