"""A model call as the toolkit asks it and stores it: the request (``ChatRequest``, whose ``key`` is the
call's cache key) and what came back (``ChatResult``). The client layer sends them; the store persists
them; a served model is named by what it is (``served_identity``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer


class ChatRequest(BaseModel):
    """A chat call, fully determined: two equal requests must give one cache key."""

    provider: str  # "openai", "anthropic", "local", ... (instructor's provider/model convention)
    model: str
    # [{"role": "system"|"user"|"assistant", "content": ...}]: the content a string, or in a structured
    # mode's re-ask the blocks of its shape (an Anthropic tool_use answered by a tool_result)
    messages: list[dict[str, Any]]
    params: dict[str, Any] = Field(default_factory=dict)  # temperature, max_tokens, top_p, seed, ...
    k: int = 0  # attempt index: K samples of one prompt are K different calls
    # The model as the user names it (a student's or teacher's provider/model), for a call to a server
    # other than the provider's own: its served name (``model``) alone does not say which weights
    # answer (two servers may both serve "default"). None at the provider's own API.
    name: str | None = None
    # What the user says changed behind a name (``--cache-tag``): a new tag makes new calls.
    cache_tag: str | None = None
    # A structured call (``structured.py``): the reply's model, its JSON schema and the mode that asks
    # for it. The wire builds the body from them (instructor's handler for the mode); the key holds
    # the schema and the mode's name, never the body, which changes with instructor's version.
    response_model: type[BaseModel] | None = Field(default=None, exclude=True)
    response_schema: dict[str, Any] | None = None
    mode: str | None = None

    def key(self) -> str:
        """sha256 over the canonical JSON of everything that determines the answer: the provider,
        the model by its names, the request and its parameters; not the address it is asked at (a
        replica, a new port or host answer the same call).

        A field added after the first release enters the key only when set (``_KEYED_WHEN_SET``),
        so the calls stored before it keep their keys: a call to a provider's own API has the key
        it always had. ``endpoint`` (the server's URL, keyed only when set) went without a trace, and
        the store re-keyed the calls that had one (store/schema.py, v15). A structured call is keyed
        by its logical request (the caller's messages, the schema, the mode's name); the store
        re-keyed the structured calls keyed by their wire body before (v19).
        """
        data = {**_KEYED_AS_UNSET, **self.model_dump(mode="json")}
        for name in _KEYED_WHEN_SET:
            if data[name] is None:
                del data[name]
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Without the structured fields when unset: an unstructured call is stored as it always was."""
        data = handler(self)
        for name in _STRUCTURED:
            if data.get(name) is None:
                data.pop(name, None)
        return data


_KEYED_WHEN_SET = ("name", "cache_tag")
_STRUCTURED = ("response_schema", "mode")  # dumped (and keyed) only when set
# keyed unset as it always was (null): no caller set it before structured calls were keyed by their schema
_KEYED_AS_UNSET: dict[str, None] = {"response_schema": None}
# finish reasons of a reply cut off by its token budget (OpenAI's, Anthropic's)
TRUNCATED = ("length", "max_tokens")


class ChatResult(BaseModel):
    """What a provider returned for one call."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    # whether the server said the call's usage (tokens_in and tokens_out are its count); a reply
    # without it is counted at its bound (``usage.prompt_bound`` and its max_tokens)
    metered: bool = True

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut off by its token budget."""
        return self.finish_reason in TRUNCATED


def served_identity(served: str) -> str:
    """A served model as a call's key names it: by what it is. A weights file or directory a server
    loaded (llama.cpp's and vLLM's servers list the path as it was typed) by its file name, so that
    ./m.gguf, /models/m.gguf and each replica's own spelling are one model; any other id as it is."""
    path = PurePath(served)
    return path.name if served.startswith(("/", "~", ".")) or path.suffix == ".gguf" else served
