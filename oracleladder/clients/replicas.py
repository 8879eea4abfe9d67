"""One model served by several servers (vLLM data-parallel, several llama.cpp servers): a Provider
that sends each request to the replica with the fewest requests in flight, each replica with its
own concurrency, and cools down a replica that fails so the others take its calls.

It makes exactly one request per ``complete`` like every provider: a failed request raises, and
the Client's retry goes to another replica (the failed one is cooling down), so no call is answered
twice. Replicas are one model: a call's key names the model, never the replica that answers it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .base import ChatRequest, ChatResult, Provider
from .errors import TransientError

log = logging.getLogger(__name__)


@dataclass
class _Replica:
    provider: Provider
    url: str
    limit: int  # its own concurrency
    inflight: int = 0
    failures: int = 0  # in a row: the cool-down doubles with each, up to max_cooldown
    cool_until: float = 0.0  # monotonic


class ReplicaProvider:
    def __init__(self, providers: Sequence[Provider], urls: Sequence[str], concurrency: int | Sequence[int],
                 *, max_cooldown: float) -> None:
        limits = [concurrency] * len(urls) if isinstance(concurrency, int) else list(concurrency)
        if not len(providers) == len(urls) == len(limits) or not urls:
            raise ValueError("replicas need one provider, URL and concurrency each")
        self.name = providers[0].name
        self.base_url = urls[0]
        self.base_urls = tuple(urls)
        self.endpoint = providers[0].endpoint  # the first's, in messages (a call key names no URL)
        self.max_cooldown = max_cooldown
        self.replicas = [_Replica(p, u, max(1, n)) for p, u, n in zip(providers, urls, limits)]
        self._changed = asyncio.Condition()

    @property
    def concurrency(self) -> int:
        return sum(r.limit for r in self.replicas)

    async def served_models(self) -> list[str]:
        """The model ids the first replica lists (replicas serve one model): the name the requests
        carry, as with one server, so that a call has one key however many replicas serve it."""
        served = getattr(self.replicas[0].provider, "served_models", None)
        return await served() if served is not None else []

    async def _take(self) -> _Replica:
        """The healthy replica with a free slot and the fewest requests in flight; waits for one."""
        async with self._changed:
            while True:
                now = time.monotonic()
                free = [r for r in self.replicas if r.inflight < r.limit]
                healthy = [r for r in free if r.cool_until <= now]
                if healthy:
                    replica = min(healthy, key=lambda r: r.inflight)
                    replica.inflight += 1
                    return replica
                wake = min((r.cool_until - now for r in free), default=None)  # a cooled one recovers
                try:
                    await asyncio.wait_for(self._changed.wait(), wake)
                except TimeoutError:
                    pass

    async def complete(self, request: ChatRequest) -> ChatResult:
        replica = await self._take()
        try:
            result = await replica.provider.complete(request)
        except TransientError as e:
            replica.failures += 1
            cool = e.retry_after if e.retry_after is not None else 2.0 ** (replica.failures - 1)
            replica.cool_until = time.monotonic() + min(cool, self.max_cooldown)
            if replica.failures == 1:
                log.warning("replica %s failed (%s); it is cooled down and the others take its calls",
                            replica.url, e)
            # its Retry-After is spent on this replica: the call's retry goes to another at once
            raise type(e)(str(e), status=e.status) from None
        finally:
            replica.inflight -= 1
            async with self._changed:
                self._changed.notify_all()
        replica.failures = 0
        return result

    async def aclose(self) -> None:
        for r in self.replicas:
            await r.provider.aclose()
