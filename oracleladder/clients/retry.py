"""The retries of one call: tenacity's loop over TransientErrors (429, 5xx, timeouts, dropped
connections), exponential backoff with full jitter or the server's Retry-After, every wait bounded."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from .base import ChatResult
from .errors import TransientError
from .limits import Cooldown


class Retries:
    """At most ``max_attempts`` attempts of a call; ``on_retry`` is told before each re-send."""

    def __init__(self, max_attempts: int, backoff_base: float, backoff_max: float, cooldown: Cooldown,
                 on_retry: Callable[[], None]) -> None:
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._cooldown = cooldown
        self._on_retry = on_retry

    def _wait(self, state: Any) -> float:
        err = state.outcome.exception()
        bound = self._cooldown.max_s
        if isinstance(err, TransientError) and err.retry_after is not None:
            wait = self._cooldown.capped(err.retry_after)
            return min(bound, wait + random.uniform(0, 0.1 * max(wait, 0.05)))
        cap = min(self.backoff_max, bound, self.backoff_base * (2 ** (state.attempt_number - 1)))
        return random.uniform(0, cap)  # exponential backoff, full jitter

    async def run(self, sleep: Callable[[float], Awaitable[None]], attempt: Callable[..., Awaitable[ChatResult]],
                  *args: Any) -> ChatResult:
        """``await attempt(*args)`` until it succeeds, raises a permanent error, or the attempts are
        spent (the last TransientError, saying so); ``sleep`` waits between attempts (the call's slot
        gives itself back meanwhile)."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(TransientError),
            before_sleep=lambda state: self._on_retry(),
            sleep=sleep,
            reraise=True,
        )
        try:
            return await retrying(attempt, *args)
        except TransientError as e:
            raise type(e)(f"{e} (gave up after {self.max_attempts} attempts)", status=e.status,
                          retry_after=e.retry_after) from e
