"""Structured outputs: a reply parsed into a pydantic model, the request asked in one of four modes.

Each mode is one entry of ``MODES``: what it adds to the request, so that the JSON schema has ONE
owner there (the ``response_format`` for json_schema and json_object, the forced tool's parameters
for tools, the system prompt for md_json; never sent twice), and where its reply is read (the
message's text, or for tools the forced call's arguments: ``reply_text``, which the OpenAI wire
reads every message with). Each reply is validated in one place (``Shape.parse``), by pydantic.

One structured call is one model call: an invalid reply raises ``StructuredOutputError`` with what
a caller needs to ask again (the compile loop is the one that does, each call a stored attempt).

Why not instructor: its modes build the request, so what is sent (and so the call key) changes with
its version (1.7's JSON_SCHEMA mode sent the schema twice, in a system prompt and in a json_object
``response_format``; 1.17's sends one json_schema ``response_format``), and its parsing is pydantic's
``model_validate_json`` behind a fake OpenAI ``ChatCompletion`` it needs even for Anthropic. Here the
request is a ChatRequest from the start, every call cached.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from .base import ChatRequest, ChatResult
from .errors import BadRequestError, ConfigurationError

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)
Schema = dict[str, Any]


class Mode(NamedTuple):
    """One way of asking for a structured reply."""

    description: str
    # the request params that carry the schema, given the model's name and schema; None: the
    # system prompt carries it
    params: Callable[[str, Schema], dict[str, Any]] | None


def _json_schema(name: str, schema: Schema) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}


def _json_object(name: str, schema: Schema) -> dict[str, Any]:
    return {"response_format": {"type": "json_object", "schema": schema}}


def _tools(name: str, schema: Schema) -> dict[str, Any]:
    """A forced call of the one tool whose parameters are the schema; the reply is the call's
    arguments (``reply_text``)."""
    return {"tools": [{"type": "function", "function": {"name": name, "parameters": schema}}],
            "tool_choice": {"type": "function", "function": {"name": name}}}


def reply_text(message: Mapping[str, Any]) -> Any:
    """The reply an OpenAI chat-completions message holds: its text, or, when it has none but a
    tool call, that call's arguments (mode tools asks for its reply as a forced call; no other
    request asks for a tool, so the wire needs no mode to read a message)."""
    text = message["content"]
    calls = message.get("tool_calls")
    if not text and calls:
        return calls[0]["function"]["arguments"]
    return text


# How a structured answer is asked for, strongest first. "auto" starts at the first and steps down
# when a server rejects a mode (``Modes``).
MODES: dict[str, Mode] = {
    "json_schema": Mode("a JSON-schema response_format", _json_schema),
    "json_object": Mode("a JSON-object response_format carrying the schema as its decoding constraint (llama.cpp)",
                        _json_object),
    "tools": Mode("a forced tool call whose parameters are the schema", _tools),
    "md_json": Mode("the schema in the prompt, the JSON in a ```json block", None),
}
STRUCTURED_MODES: dict[str, str] = {name: mode.description for name, mode in MODES.items()}
# Providers whose wire has no OpenAI response_format or tools: the schema goes in the prompt (a
# Python function gets the messages, and would drop a response_format).
PROMPT_ONLY = {"anthropic", "python"}
# Providers whose wire takes some of the modes only: Gemini's takes the schema as its response_schema
# (google_api.generate_args), and has no OpenAI tools.
ONLY_MODES = {"google": ("json_schema", "md_json")}
_NAMES_MODE = re.compile(r"response_format|json_schema|json_object|tool|schema", re.IGNORECASE)
_FENCED = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)


class StructuredOutputError(Exception):
    """The model's reply is not a valid ``model``.

    ``raw``: the reply's text as the model wrote it; ``errors``: pydantic's errors for it (a reply
    that is no JSON at all is one ``json_invalid`` error); ``attempts``: the model calls made (one);
    ``tokens_in``/``tokens_out``: their usage; ``truncated``: the reply was cut off by its token
    budget (not worth asking again: the same budget cuts it off again); ``request``: the request as
    asked (without what its mode adds), so a caller asks again with the messages
    ``request.messages + error.reask()``."""

    def __init__(self, model: type[BaseModel], request: ChatRequest, reply: ChatResult,
                 error: ValidationError) -> None:
        self.model = model
        self.request = request
        self.raw = reply.text
        self.errors: list[dict[str, Any]] = error.errors(include_url=False, include_context=False)
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

    def reask(self) -> list[dict[str, str]]:
        """The messages that ask again: the reply, then what is wrong with it."""
        return [{"role": "assistant", "content": self.raw},
                {"role": "user", "content": f"Your reply is not a valid {self.model.__name__}: {self.describe()}. "
                                            "Reply again with the whole corrected JSON object."}]


class Shape(Generic[M]):
    """Replies of ``model``: asked for in each mode (the schema made once, shared by every request,
    never changed), and parsed."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self.schema = model.model_json_schema()
        self._params = {name: mode.params(model.__name__, self.schema)
                        for name, mode in MODES.items() if mode.params is not None}
        self._prompt = ("Answer with one JSON object matching this JSON schema (an instance of it, not the schema), "
                        "in a ```json block:\n" + json.dumps(self.schema, indent=2, ensure_ascii=False))

    def request(self, request: ChatRequest, mode: str) -> ChatRequest:
        """``request`` asked in ``mode``: the schema in exactly one place."""
        if mode in self._params:
            return request.model_copy(update={"params": {**request.params, **self._params[mode]}})
        messages = list(request.messages)
        if messages and messages[0].get("role") == "system":
            messages[0] = {**messages[0], "content": messages[0]["content"] + "\n\n" + self._prompt}
        else:
            messages.insert(0, {"role": "system", "content": self._prompt})
        return request.model_copy(update={"messages": messages})

    def parse(self, request: ChatRequest, reply: ChatResult) -> M:
        """The reply to ``request`` as a ``model``, else StructuredOutputError. The JSON is taken
        from a ```json block, else from the first ``{`` to the last ``}``: a model that wraps it in
        words or a fence is not failed for that."""
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
            raise StructuredOutputError(self.model, request, reply, e) from None


class Modes:
    """The structured modes a Client asks in, first the one in use. With "auto", a mode the server
    rejects is dropped for the client's endpoint (learned once, said once)."""

    def __init__(self, mode: str, provider: str) -> None:
        if mode != "auto" and mode not in MODES:
            raise ConfigurationError(f"unknown structured mode {mode!r}; known: auto, " + ", ".join(MODES))
        taken = ["md_json"] if provider in PROMPT_ONLY else list(ONLY_MODES.get(provider, MODES))
        if mode not in ("auto", *taken):  # its wire would drop the schema
            raise ConfigurationError(f"{provider} takes structured mode {' or '.join(taken)} (or auto), not {mode}")
        self.left = [mode] if mode != "auto" else taken

    @property
    def current(self) -> str:
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
