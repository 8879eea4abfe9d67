"""One model served by several servers (vLLM data-parallel, several llama.cpp servers): a Provider
that sends each request to the replica with the fewest requests in flight, each replica with its
own concurrency (lowered when it times out or answers 429, limits.Concurrency), and cools down a
replica that fails so the others take its calls.

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
from .errors import RequestTimeout, TransientError, scrub
from .limits import Concurrency

log = logging.getLogger(__name__)


@dataclass
class _Replica:
    provider: Provider
    url: str
    slots: Concurrency  # its own
    failures: int = 0  # in a row: the cool-down doubles with each, up to max_cooldown
    cool_until: float = 0.0  # monotonic


class ReplicaProvider:
    def __init__(self, providers: Sequence[Provider], urls: Sequence[str], concurrency: int | Sequence[int],
                 *, start: int | Sequence[int] | None = None, max_cooldown: float) -> None:
        limits = [concurrency] * len(urls) if isinstance(concurrency, int) else list(concurrency)
        starts = [start] * len(urls) if start is None or isinstance(start, int) else list(start)
        if not len(providers) == len(urls) == len(limits) == len(starts) or not urls:
            raise ValueError("replicas need one provider, URL and concurrency each")
        self.name = providers[0].name
        self.base_url = urls[0]
        self.base_urls = tuple(urls)
        self.endpoint = providers[0].endpoint  # the first's, in messages (a call key names no URL)
        self.max_cooldown = max_cooldown
        # each replica's URL as logs show it
        self.replicas = [_Replica(p, scrub(u), Concurrency(n, s, scrub(u)))
                         for p, u, n, s in zip(providers, urls, limits, starts)]
        self._changed = asyncio.Condition()

    @property
    def concurrency(self) -> int:
        return sum(r.slots.ceiling for r in self.replicas)

    async def served_models(self) -> list[str]:
        """The models the first replica lists (replicas serve one model), each replica asked so that it
        learns its own name for them: a call has one key however many replicas serve it, in any order."""
        listed = [await served() for r in self.replicas if (served := getattr(r.provider, "served_models", None))]
        return next((names for names in listed if names), [])

    async def _take(self) -> tuple[_Replica, int]:
        """The healthy replica with a free slot and the fewest requests in flight, and the epoch of its
        concurrency the request is sent in; waits for one."""
        async with self._changed:
            while True:
                now = time.monotonic()
                free = [r for r in self.replicas if r.slots.free()]
                healthy = [r for r in free if r.cool_until <= now]
                if healthy:
                    replica = min(healthy, key=lambda r: r.slots.inflight)
                    return replica, replica.slots.take()
                wake = min((r.cool_until - now for r in free), default=None)  # a cooled one recovers
                try:
                    await asyncio.wait_for(self._changed.wait(), wake)
                except TimeoutError:
                    pass

    async def complete(self, request: ChatRequest) -> ChatResult:
        replica, epoch = await self._take()
        try:
            result = await replica.provider.complete(request)
        except TransientError as e:
            if e.status == 429 or isinstance(e, RequestTimeout):
                replica.slots.overloaded(epoch, str(e))
            replica.failures += 1
            cool = e.retry_after if e.retry_after is not None else 2.0 ** (replica.failures - 1)
            replica.cool_until = time.monotonic() + min(cool, self.max_cooldown)
            if replica.failures == 1:
                log.warning("replica %s failed (%s); it is cooled down and the others take its calls",
                            replica.url, e)
            # its Retry-After is spent on this replica: the call's retry goes to another at once
            raise type(e)(str(e), status=e.status) from None
        finally:
            replica.slots.give()
            async with self._changed:
                self._changed.notify_all()
        replica.failures = 0
        replica.slots.answered()
        return result

    async def aclose(self) -> None:
        for r in self.replicas:
            await r.provider.aclose()

