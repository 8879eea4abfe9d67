"""Answers as a student writes them under a larger token budget, built from the released responses
(tests/data/responses_sample.jsonl), for the benchmarks and the verifier's verdict gate
(tests/verify/test_gate.py).

Each answer is one released response lengthened the way a longer budget lengthens a response:
more work before the same final answer. The released rows keep a response's last 800 characters
(`response_tail`, its final answer in them) and its full length (`response_chars`); the work put
before the tail is released text with its boxes opened (`\\boxed{4}` -> `{4}`), so an answer holds
its own response's boxes and no other's, and compresses as real text does."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

_BOX = re.compile(r"\\(?:boxed|fbox)\s*(?=\{)")
_END_TOKEN = re.compile(r"<\|[^|<>]*\|>|<｜[^｜<>]*｜>")  # <|endoftext|> ends a response, not its work


class ReleasedAnswers:
    """One released response per (problem, seed), lengthened by `budget_scale`: a response to the
    problem `pid` where the sample holds one, any other response otherwise. Deterministic."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], budget_scale: float) -> None:
        self.rows = list(rows)
        self.budget_scale = budget_scale
        self.by_pid: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for row in self.rows:
            self.by_pid[row["pid"]].append(row)
        self.work = "\n\n".join(_END_TOKEN.sub("", _BOX.sub("", r["response_tail"])).strip() for r in self.rows)

    def __call__(self, pid: str, seed: str) -> str:
        h = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
        pool = self.by_pid.get(pid) or self.rows
        row = pool[h % len(pool)]
        tail = row["response_tail"]
        missing = int(row["response_chars"] * self.budget_scale) - len(tail)
        if missing <= 0:
            return tail
        start = (h >> 16) % len(self.work)
        work = self.work[start:] + "\n\n" + self.work  # from `start` on, wrapping once
        return work[:missing] + "\n\n" + tail
