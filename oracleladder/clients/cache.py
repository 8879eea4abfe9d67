"""Where a Client looks a call up before sending it: the store (or any ``CallCache``), the calls
already in flight in this process, whose answer a second asker shares instead of paying for it
again, and (``claim``) those another process on the same store is asking."""

from __future__ import annotations

import asyncio
from typing import Protocol

from .base import ChatRequest, ChatResult


class CallCache(Protocol):
    """The slice of ``oracleladder.store.Store`` the runner needs."""

    async def get_call(self, key: str) -> ChatResult | None: ...

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None) -> None:
        """Store a call (and end this cache's claim on it)."""

    async def claim(self, key: str) -> ChatResult | None:
        """Claim a call before asking it: None, it is this cache's to ask; or its answer, which
        another asker of the same cache (another process on the store) got meanwhile."""

    async def release(self, key: str) -> None:
        """End a claim whose call is not stored (never sent, cancelled)."""


class MemoryCache:
    """In-process CallCache (tests, one-off scripts). Errors are remembered but never served."""

    def __init__(self) -> None:
        self.results: dict[str, ChatResult] = {}
        self.errors: dict[str, str] = {}

    async def get_call(self, key: str) -> ChatResult | None:
        return self.results.get(key)

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None) -> None:
        k = request.key()
        if result is not None:
            self.results[k] = result
            self.errors.pop(k, None)
        elif error is not None:
            self.errors[k] = error

    async def claim(self, key: str) -> ChatResult | None:
        return None  # one process: InFlight shares its calls

    async def release(self, key: str) -> None:
        return None


class InFlight:
    """The calls in flight, by call key: the same call asked meanwhile waits for the first one's
    answer (or its error) instead of being sent again."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[ChatResult]] = {}

    def get(self, key: str) -> asyncio.Future[ChatResult] | None:
        return self._futures.get(key)

    def start(self, key: str) -> asyncio.Future[ChatResult]:
        fut = self._futures[key] = asyncio.get_running_loop().create_future()
        return fut

    def end(self, key: str) -> None:
        self._futures.pop(key, None)

    @staticmethod
    def fail(fut: asyncio.Future[ChatResult], error: BaseException) -> None:
        if not fut.done():
            fut.set_exception(error)
            fut.exception()  # mark retrieved: nobody else may be waiting
