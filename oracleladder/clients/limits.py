"""What a Client's calls wait for before they are sent: a concurrency slot (the calls in flight to
one endpoint, lowered when it times out or answers 429), the per-minute request and token buckets,
the one cool-down every worker shares after a 429, and the spending budget."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from .errors import Arg, BudgetReached, ConfigurationError

log = logging.getLogger(__name__)
DEFAULT_MAX_COOLDOWN_S = 120.0


class RateLimiter:
    """Token bucket shared by every worker of a Client: ``rate`` units per minute, burst ``rate``."""

    def __init__(self, per_minute: float, burst: float | None = None) -> None:
        self.rate_s = per_minute / 60.0
        self.capacity = burst if burst is not None else per_minute
        self.tokens = self.capacity
        self.t = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.t) * self.rate_s)
        self.t = now

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(amount, self.capacity)
        async with self._lock:  # FIFO: a big request is not starved by small ones
            while True:
                self._refill()
                if self.tokens >= amount:
                    self.tokens -= amount
                    return
                await asyncio.sleep((amount - self.tokens) / self.rate_s)

    def adjust(self, delta: float) -> None:
        """Charge (delta > 0) or refund (delta < 0) after the real cost is known."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - delta)


class Concurrency:
    """The calls in flight to one endpoint: at most ``limit``. It grows by one each time ``limit``
    calls in a row are answered, up to ``ceiling``, and halves at a timeout or a 429 (additive
    increase, multiplicative decrease), said once: a server queueing more than it runs times the
    queue out. A call sent before the last decrease (an older ``epoch``) lowers it no further: the
    calls of one burst time out together."""

    def __init__(self, ceiling: int, start: int | None = None, who: str = "") -> None:
        self.ceiling = max(1, ceiling)
        self.limit = max(1, min(self.ceiling, start or self.ceiling))
        self.inflight = 0
        self.epoch = 0
        self._streak = 0  # calls answered since the limit last changed
        self._who = who
        self._said = False
        self._changed = asyncio.Event()  # set (and replaced) when a call ends

    def free(self) -> bool:
        return self.inflight < self.limit

    def take(self) -> int:
        """One more call in flight; returns the epoch it is sent in."""
        self.inflight += 1
        return self.epoch

    def give(self) -> None:
        self.inflight -= 1

    async def acquire(self) -> int:
        while not self.free():
            await self._changed.wait()
        return self.take()

    def release(self) -> None:
        self.give()
        self._changed.set()
        self._changed = asyncio.Event()

    def answered(self) -> None:
        self._streak += 1
        if self._streak >= self.limit and self.limit < self.ceiling:
            self.limit += 1
            self._streak = 0

    def overloaded(self, epoch: int, why: str) -> None:
        """A call sent in ``epoch`` timed out or got a 429 (``why``)."""
        self._streak = 0
        if epoch != self.epoch:
            return
        was, self.limit = self.limit, max(1, self.limit // 2)
        self.epoch += 1
        if not self._said:
            self._said = True
            if was > 1:
                log.warning("%s: %s with %d calls in flight: concurrency lowered to %d (it grows back by one "
                            "while calls are answered; said once; "
                            "--timeout S gives each call longer)", self._who, why, was, self.limit)
            else:
                log.warning("%s: %s with one call in flight (retried; more are counted in the summary): "
                            "raise --timeout", self._who, why)


class Slot:
    """One of a Client's concurrency slots: held for a whole call, given back while it sleeps.
    ``epoch``: the concurrency's epoch when it was last taken."""

    def __init__(self, limit: Concurrency) -> None:
        self._limit = limit
        self._held = False
        self.epoch = 0

    async def __aenter__(self) -> Slot:
        self.epoch = await self._limit.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._held:
            self._held = False
            self._limit.release()

    async def sleep(self, seconds: float) -> None:
        self._held = False
        self._limit.release()
        await asyncio.sleep(seconds)
        self.epoch = await self._limit.acquire()  # a cancel here leaves no slot held, and none is released twice
        self._held = True


class Cooldown:
    """ONE cool-down shared by every worker of a Client after a 429, and the bound on any wait a
    server asks for: one Retry-After of 3600 must not stop every worker for an hour."""

    def __init__(self, max_s: float, who: str) -> None:
        self.max_s = max_s
        self.until = 0.0  # monotonic
        self._who = who
        self._warned = False

    def capped(self, wait: float) -> float:
        """``wait`` bounded by ``max_s``; says once when a server asks for longer."""
        if wait > self.max_s and not self._warned:
            self._warned = True
            log.warning("%s asks to wait %.0f s (Retry-After); waiting at most %g s (--max-cooldown)",
                        self._who, wait, self.max_s)
        return min(wait, self.max_s)

    def start(self, wait: float) -> None:
        self.until = max(self.until, time.monotonic() + self.capped(wait))

    async def wait(self) -> float | None:
        """Sleep until the cool-down is over: the seconds waited, None if there was none."""
        t0 = time.monotonic()
        waited = False
        while (d := self.until - time.monotonic()) > 0:
            waited = True
            await asyncio.sleep(d)
        return time.monotonic() - t0 if waited else None


class Budget:
    """``--max-cost``: no call is sent that could take the spend past ``max_cost`` USD. Each call
    holds its worst cost (its prompt and an answer of its whole max_tokens) until it ends."""

    def __init__(self, max_cost: float, name: str) -> None:
        self.max_cost = max_cost
        self.name = name
        self.stop: str | None = None  # why calls are refused, once the budget is reached
        self._reserved = 0.0  # the most the calls in flight can still cost
        self._released = asyncio.Event()  # set (and replaced) when a call in flight ends

    async def reserve(self, worst: float | None, spent: Callable[[], float | None], bounded: bool) -> float:
        """Hold ``worst`` until ``release``. A call that fits only once calls in flight end waits for
        them; once even the spend so far leaves no room for it, raises BudgetReached, and so does
        every later call. ``bounded``: the call says its max_tokens."""
        while self.stop is None:
            so_far = spent()
            if worst is None or so_far is None or not bounded:
                raise ConfigurationError(Arg("max_cost"), f" cannot bound the cost of a call to {self.name}")
            if so_far + worst > self.max_cost:
                self.stop = (f"stopped at the budget: ${so_far:.4f} spent, and the next call could cost "
                             f"${worst:.4f} more than --max-cost ${self.max_cost:g} allows")
            elif so_far + self._reserved + worst <= self.max_cost:
                self._reserved += worst
                return worst
            else:
                await self._released.wait()  # the calls in flight may cost less than their worst
        raise BudgetReached(self.stop)

    def release(self, reserved: float) -> None:
        if reserved:
            self._reserved -= reserved
            self._released.set()
            self._released = asyncio.Event()
