"""Structured outputs: a reply parsed into a pydantic model, the request asked in one of four modes.

Each mode has ONE owner of the JSON schema in the request: the ``response_format`` (json_schema,
json_object), the forced tool's parameters (tools), or the prompt (md_json); the schema is never
sent twice. Each reply is validated in one place (``Shape.parse``), by pydantic.

Why not instructor: its modes build the request, so what is sent (and so the call key) changes with
its version (1.7's JSON_SCHEMA mode sent the schema twice, in a system prompt and in a json_object
``response_format``; 1.17's sends one json_schema ``response_format``), and its parsing is pydantic's
``model_validate_json`` behind a fake OpenAI ``ChatCompletion`` it needs even for Anthropic. Here the
request is a ChatRequest from the start, every attempt a cached call, and the re-ask loop is ours
(``max_retries=0``: no re-ask, the caller's own loop decides).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .base import ChatRequest, ChatResult
from .errors import BadRequestError, ConfigurationError

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)

# How a structured answer is asked for, strongest first. "auto" starts at the first and steps down
# when a server rejects a mode (``Modes``).
STRUCTURED_MODES: dict[str, str] = {
    "json_schema": "a JSON-schema response_format",
    "json_object": "a JSON-object response_format carrying the schema as its decoding constraint (llama.cpp)",
    "tools": "a forced tool call whose parameters are the schema",
    "md_json": "the schema in the prompt, the JSON in a ```json block",
}
# Providers whose wire has no OpenAI response_format or tools: the schema goes in the prompt.
PROMPT_ONLY = {"anthropic"}
_TRUNCATED = ("length", "max_tokens")  # finish reasons of a reply cut off by its token budget
_NAMES_MODE = re.compile(r"response_format|json_schema|json_object|tool|schema", re.IGNORECASE)
_FENCED = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)


class StructuredOutputError(Exception):
    """The model's reply is not a valid ``model``, after every re-ask allowed.

    ``raw``: the last reply's text as the model wrote it; ``errors``: pydantic's errors for it (a
    reply that is no JSON at all is one ``json_invalid`` error); ``attempts``: the model calls made;
    ``tokens_in``/``tokens_out``: their usage, summed; ``truncated``: the last reply was cut off by its
    token budget (never re-asked: the same budget cuts it off again); ``request``: the last request
    as asked (without what its mode adds), so a caller re-asks with the messages
    ``request.messages + error.reask()``."""

    def __init__(self, model: type[BaseModel], request: ChatRequest, replies: list[ChatResult],
                 error: ValidationError) -> None:
        self.model = model
        self.request = request
        self.raw = replies[-1].text
        self.errors: list[dict[str, Any]] = error.errors(include_url=False, include_context=False)
        self.attempts = len(replies)
        self.tokens_in = sum(r.tokens_in for r in replies)
        self.tokens_out = sum(r.tokens_out for r in replies)
        self.truncated = replies[-1].finish_reason in _TRUNCATED
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
    """How replies of ``model`` are asked for in each mode (the schema made once), and parsed."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self.schema = model.model_json_schema()  # shared by every request: never changed
        name = model.__name__
        self._params: dict[str, dict[str, Any]] = {
            "json_schema": {"response_format": {"type": "json_schema",
                                                "json_schema": {"name": name, "schema": self.schema}}},
            "json_object": {"response_format": {"type": "json_object", "schema": self.schema}},
            "tools": {"tools": [{"type": "function", "function": {"name": name, "parameters": self.schema}}],
                      "tool_choice": {"type": "function", "function": {"name": name}}},
            "md_json": {},
        }
        self._prompt = ("Answer with one JSON object matching this JSON schema (an instance of it, not the schema), "
                        "in a ```json block:\n" + json.dumps(self.schema, indent=2, ensure_ascii=False))

    def request(self, request: ChatRequest, mode: str) -> ChatRequest:
        """``request`` asked in ``mode``: the schema in exactly one place."""
        if mode == "md_json":
            messages = list(request.messages)
            if messages and messages[0].get("role") == "system":
                messages[0] = {**messages[0], "content": messages[0]["content"] + "\n\n" + self._prompt}
            else:
                messages.insert(0, {"role": "system", "content": self._prompt})
            return request.model_copy(update={"messages": messages})
        return request.model_copy(update={"params": {**request.params, **self._params[mode]}})

    def parse(self, text: str) -> M:
        """The reply as a ``model`` (raises pydantic's ValidationError). The JSON is taken from a
        ```json block, else from the first ``{`` to the last ``}``: a model that wraps it in words
        or a fence is not failed for that."""
        fenced = _FENCED.search(text)
        if fenced:
            text = fenced.group(1)
        else:
            start, end = text.find("{"), text.rfind("}")
            if 0 <= start < end:
                text = text[start:end + 1]
        return self.model.model_validate_json(text)


async def ask(complete: Callable[[ChatRequest], Awaitable[ChatResult]], request: ChatRequest, shape: Shape[M],
              mode: str, max_retries: int) -> M:
    """``request`` asked in ``mode`` and its reply parsed; an invalid reply is re-asked (its text and
    errors appended) at most ``max_retries`` times, then raises StructuredOutputError. Every attempt
    is one ``complete`` call (cached)."""
    replies: list[ChatResult] = []
    while True:
        reply = await complete(shape.request(request, mode))
        replies.append(reply)
        try:
            return shape.parse(reply.text)
        except ValidationError as e:
            error = StructuredOutputError(shape.model, request, replies, e)
        if error.truncated or len(replies) > max_retries:
            raise error
        request = request.model_copy(update={"messages": [*request.messages, *error.reask()]})


class Modes:
    """The structured modes a Client asks in, first the one in use. With "auto", a mode the server
    rejects is dropped for the client's endpoint (learned once, said once)."""

    def __init__(self, mode: str, provider: str) -> None:
        if mode != "auto" and mode not in STRUCTURED_MODES:
            raise ConfigurationError(f"unknown structured mode {mode!r}; known: auto, " + ", ".join(STRUCTURED_MODES))
        if provider in PROMPT_ONLY and mode not in ("auto", "md_json"):  # its wire would drop the schema
            raise ConfigurationError(f"{provider} takes structured mode md_json (or auto), not {mode}")
        if mode != "auto":
            self.left = [mode]
        else:
            self.left = ["md_json"] if provider in PROMPT_ONLY else list(STRUCTURED_MODES)

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
