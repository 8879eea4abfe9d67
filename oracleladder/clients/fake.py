"""In-process providers whose replies are scripted, recording what was asked (httpx's ``MockTransport``
is the model): the loops and the client run for real above them (the cache, the claims, the budget,
the store), with no server and no socket. Where the wire itself is the point (bodies, headers, status
codes, faults of a connection), the loopback server is the tool instead.

``FakeProvider`` answers each request with a Python function (a test's)::

    provider = FakeProvider(lambda request: "\\\\boxed{4}")
    client = Client(provider, model="student", cache=store)  # calls filed as openai/student
    ...
    assert len(provider.requests) == 3

``fake/NAME`` is a model like any other (``--student fake/NAME``, declared as the fake/ wire:
``WIRE``), answered from the script ``$LADDER_FAKE_SCRIPT`` names: a JSONL file of rules, each
``{"answer": TEXT or [TEXT, ...], "prompt": REGEX, "model": NAME, "tokens_in": N, "tokens_out": N,
"finish_reason": WHY}`` (all but the answer optional). A call takes the first rule whose ``model`` is
its model and whose ``prompt`` is found in its messages' text; a list of answers is indexed by the
call's sample index (``k``, cycled), so K samples of one prompt can differ. A call that no rule
answers fails (``BadRequestError``): it is never an answer.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from .base import ChatRequest, ChatResult
from .errors import BadRequestError, ConfigurationError
from .openai_api import MODES as OPENAI_MODES
from .registry import Connection, ProviderSpec

ENV_SCRIPT = "LADDER_FAKE_SCRIPT"
Reply = ChatResult | str
Handler = Callable[[ChatRequest], Reply | Awaitable[Reply]]


class FakeProvider:
    """A Provider answering each request with ``handler(request)`` (a function or a coroutine
    function): a ChatResult, or its text (finish reason "stop", no token counts). To fail a call the
    handler raises what a real provider raises (a ``clients.errors`` exception: ``RateLimitError``,
    ``BadRequestError``, ...); the client retries, caches and counts above it as it does over a wire.

    ``requests``: every request asked, in order (retries and re-asks included; cache hits never
    reach a provider)."""

    def __init__(self, handler: Handler, *, name: str = "openai", endpoint: str | None = None) -> None:
        self.name = name  # the provider the requests name: "anthropic" asks structured output in md_json mode
        self.endpoint = endpoint
        self.requests: list[ChatRequest] = []
        self.closed = False
        self._handler = handler

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        reply = self._handler(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return ChatResult(text=reply, finish_reason="stop") if isinstance(reply, str) else reply

    async def aclose(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class Rule:
    """One line of a script: the answers it gives, to which model and prompt, with what usage."""

    answers: tuple[str, ...]
    prompt: re.Pattern[str] | None = None
    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str = "stop"

    def reply(self, request: ChatRequest) -> ChatResult | None:
        """This rule's answer to ``request``, None when it does not answer it."""
        text = "\n".join(str(m.get("content") or "") for m in request.messages)
        if (self.model is not None and self.model != request.model) or (self.prompt and not self.prompt.search(text)):
            return None
        return ChatResult(text=self.answers[request.k % len(self.answers)], tokens_in=self.tokens_in,
                          tokens_out=self.tokens_out, finish_reason=self.finish_reason)


_FIELDS = {"answer", "prompt", "model", "tokens_in", "tokens_out", "finish_reason"}


def read_script(path: Path) -> list[Rule]:
    """The rules of the script at ``path``; ConfigurationError, naming the line, on one that is not a rule."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"{ENV_SCRIPT}: cannot read {path}: {exc.strerror}") from None
    rules = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            unknown = set(line) - _FIELDS
            answers = line["answer"] if isinstance(line["answer"], list) else [line["answer"]]
            if unknown or not answers or not all(isinstance(a, str) for a in answers):
                raise ValueError(f"unknown fields {sorted(unknown)}" if unknown else "an answer is a text or texts")
            prompt = re.compile(line["prompt"]) if "prompt" in line else None
            rules.append(Rule(tuple(answers), prompt, line.get("model"), int(line.get("tokens_in", 0)),
                              int(line.get("tokens_out", 0)), str(line.get("finish_reason", "stop"))))
        except (ValueError, KeyError, TypeError, AttributeError, re.error) as exc:
            raise ConfigurationError(f"{path} line {n} is not a rule of a fake/ script ({exc!r}); a rule is "
                                     '{"answer": TEXT, "prompt": REGEX, ...}') from None
    return rules


def _provider(connection: Connection) -> FakeProvider:
    script = os.environ.get(ENV_SCRIPT)
    if not script:
        raise ConfigurationError(f"a fake/NAME model answers from a script: set {ENV_SCRIPT} to its JSONL file")
    rules = read_script(Path(script))

    def answer(request: ChatRequest) -> ChatResult:
        for rule in rules:
            if (reply := rule.reply(request)) is not None:
                return reply
        raise BadRequestError(f"fake/{request.model}: no rule of {script} answers this prompt")

    return FakeProvider(answer, name="fake")


WIRE = ProviderSpec("fake", _provider, OPENAI_MODES, free="a script")
