"""What every provider wire is (``Provider``); the request and the reply it speaks are call records
(``schemas.calls``), which the store persists too."""

from __future__ import annotations

from typing import Protocol

from ..schemas.calls import TRUNCATED, ChatRequest, ChatResult

__all__ = ["TRUNCATED", "ChatRequest", "ChatResult", "Provider"]


class Provider(Protocol):
    """One backend. Raise a `clients.errors` exception on failure; retries happen above this."""

    name: str
    endpoint: str | None  # the server's normalized base URL; None for the provider's own API

    async def complete(self, request: ChatRequest) -> ChatResult: ...

    async def aclose(self) -> None: ...
