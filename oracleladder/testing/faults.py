"""The faults a loopback server (`loopback.LoopbackServer`) answers with on purpose: a share of its requests
failing each way, drawn from a seeded RNG or the first or last N (``Faults``), and a script's own refusal of
one request (``Refuse``)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Faults:
    """Fractions in [0, 1] of requests answered with each fault (drawn from a seeded RNG)."""

    p429: float = 0.0
    p500: float = 0.0
    hang: float = 0.0
    malformed: float = 0.0
    drop: float = 0.0
    retry_after: float | None = 0.2  # seconds in the Retry-After header of a 429 (None: no header)
    hang_s: float = 30.0
    fail_first: int = 0  # deterministic: the first N requests fail with `fail_first_kind`
    fail_first_kind: str = "429"  # "429" | "500" | "hang" | "malformed" | "drop" | "401"
    fail_after: int | None = None  # deterministic: every request after the first N fails (a server going down)
    fail_after_kind: str = "500"

    def draw(self, rng: random.Random, n: int) -> str | None:
        if n <= self.fail_first:
            return self.fail_first_kind
        if self.fail_after is not None and n > self.fail_after:
            return self.fail_after_kind
        x = rng.random()
        for kind, p in (("429", self.p429), ("500", self.p500), ("hang", self.hang),
                        ("malformed", self.malformed), ("drop", self.drop)):
            if x < p:
                return kind
            x -= p
        return None


class Refuse(Exception):
    """Raised by a script to answer this one request with an HTTP error (a per-prompt fault, e.g. a
    400 "context length exceeded" for one long prompt, or a 500 outage for some prompts only)."""

    def __init__(self, status: int, message: str = "refused (loopback)") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
