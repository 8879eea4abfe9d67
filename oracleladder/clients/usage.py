"""What a Client counts for one run: calls, retries, waits, tokens and their cost; and the bound on
a call's prompt tokens that its budget reserves."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .base import ChatRequest, ChatResult
from .errors import InvalidUsage
from .prices import DEFAULT_PRICES, PriceTable

# What a server's chat template may add, in tokens: around each message (its role, separators), and
# once per request (the reply's priming, a default system prompt), with room to spare.
MESSAGE_OVERHEAD = 16
REQUEST_OVERHEAD = 64
# the words a structured mode wraps its schema in (instructor's: the prompt's instructions, a tool's
# name and description), with room to spare
MODE_OVERHEAD = 1024
# the most tokens one call can read or write: no model's context holds a billion (the longest hold a
# few million), so a count past it is a lie, and a cost computed from it would turn the budget off
MAX_TOKENS = 10**9


def token_count(value: Any, field: str) -> int:
    """The tokens a reply's usage says in ``field``: 0 when it says none (None), else a whole number
    from 0 to MAX_TOKENS (an integral float is one); anything else raises InvalidUsage. Every wire
    reads its replies' counts through here."""
    if value is None:
        return 0
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_TOKENS:
        shown = repr(value)
        raise InvalidUsage(f"the reply's usage says {field} = {shown[:40] + '...' if len(shown) > 40 else shown}, "
                           f"which is no count of tokens (a whole number from 0 to {MAX_TOKENS:,})")
    return int(value)


def prompt_bound(request: ChatRequest) -> int:
    """A bound on ``request``'s prompt tokens that no server's count passes: a token of a byte-level
    tokenizer (OpenAI's, Anthropic's, Llama's, SentencePiece with byte fallback) holds at least one
    UTF-8 byte, so the prompt's bytes (messages, roles, and the schema a structured mode sends, in
    the prompt or where a server writes it into the prompt), plus the template's overhead. About
    four times a count of English text."""
    n = REQUEST_OVERHEAD
    for m in request.messages:
        content = m.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)  # a re-ask's blocks
        n += MESSAGE_OVERHEAD + len((m.get("role") or "").encode()) + len(text.encode())
    if request.response_schema is not None:  # sent indented in a prompt mode
        n += MODE_OVERHEAD + len(json.dumps(request.response_schema, indent=2, ensure_ascii=False).encode())
    return n


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
    unmetered: int = 0  # replies without usage, counted at their bound
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
