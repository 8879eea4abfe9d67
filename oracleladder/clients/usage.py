"""What a Client counts for one run: calls, retries, waits, tokens and their cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import ChatResult
from .prices import DEFAULT_PRICES, PriceTable


@dataclass
class Usage:
    """Counters for one run (one Client)."""

    requests: int = 0  # HTTP attempts actually sent (including retried ones)
    calls: int = 0  # complete() calls
    cache_hits: int = 0
    successes: int = 0
    failures: int = 0
    retries: int = 0
    rate_limited: int = 0  # 429s seen
    cooldown_waits: int = 0  # sends that had to wait for the shared 429 cool-down
    cooldown_wait_s: float = 0.0
    timeouts: int = 0  # attempts cut off by the request timeout
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0  # at the price paid, from the price table named below
    prices: str = DEFAULT_PRICES.name
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, r: ChatResult, prices: PriceTable, *, batch: bool = False) -> None:
        """Count one paid call of model ``name`` (provider/model), at the batch price if ``batch``."""
        self.tokens_in += r.tokens_in
        self.tokens_out += r.tokens_out
        c = prices.cost(name, r.tokens_in, r.tokens_out, batch=batch)
        m = self.by_model.get(name)
        if m is None:
            m = self.by_model[name] = {"requests": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        m["requests"] += 1
        m["tokens_in"] += r.tokens_in
        m["tokens_out"] += r.tokens_out
        if c is None:
            m["cost_usd"] = None
            self.cost_usd = None
        else:
            if m["cost_usd"] is not None:
                m["cost_usd"] += c
            if self.cost_usd is not None:
                self.cost_usd += c

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["by_model"] = {k: dict(v) for k, v in self.by_model.items()}
        return d
