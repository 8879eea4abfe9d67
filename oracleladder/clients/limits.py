"""What a Client's calls wait for before they are sent: a concurrency slot, the per-minute request
and token buckets, the one cool-down every worker shares after a 429, and the spending budget."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from .errors import BudgetReached, ConfigurationError

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


class Slot:
    """One of a Client's concurrency slots: held for a whole call, given back while it sleeps."""

    def __init__(self, sem: asyncio.Semaphore) -> None:
        self._sem = sem
        self._held = False

    async def __aenter__(self) -> "Slot":
        await self._sem.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._held:
            self._held = False
            self._sem.release()

    async def sleep(self, seconds: float) -> None:
        self._held = False
        self._sem.release()
        await asyncio.sleep(seconds)
        await self._sem.acquire()  # a cancel here leaves no slot held, and none is released twice
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
                raise ConfigurationError(f"--max-cost cannot bound the cost of a call to {self.name}")
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
