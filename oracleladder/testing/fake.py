"""An in-process provider whose replies a test scripts per request, recording what was asked (httpx's
``MockTransport`` is the model): the loops and the client run for real above it, with no server and no
socket. Where the wire itself is the point (bodies, headers, status codes, faults of a connection), the
loopback server is the tool instead.

    provider = FakeProvider(lambda request: "\\\\boxed{4}")
    client = Client(provider, model="student", cache=store)  # calls filed as openai/student
    ...
    assert len(provider.requests) == 3
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from oracleladder.schemas.calls import ChatRequest, ChatResult

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
