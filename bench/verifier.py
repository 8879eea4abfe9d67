"""Throughput of verify_many on all cores vs bare math-verify in one process (400 responses x 2).

Run: python bench/verifier.py
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from math_verify import parse, verify

from oracleladder.verify import grade_all, verify_inprocess
from oracleladder.workers import WorkerPool

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "responses_sample.jsonl"  # the release's sample, shipped with the tests


def main() -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    rows = [json.loads(line) for line in DATA.open()] * 2
    items = [{"response": r["response_tail"], "gold": r["gold"]} for r in rows]
    workers = os.cpu_count() or 1

    with WorkerPool(workers=workers, timeout_s=5.0) as pool:
        grade_all(pool, items[:workers])  # warm the workers; startup is paid once per pool
        t0 = time.perf_counter()
        verdicts = grade_all(pool, items)
        cascade = time.perf_counter() - t0
    timeouts = sum(v.reason == "timeout" for v in verdicts)

    slowest = (0.0, "")
    for it in items[:400]:
        t = time.perf_counter()
        verify_inprocess(**it)
        dt = time.perf_counter() - t
        slowest = max(slowest, (dt, it["gold"]))

    t0 = time.perf_counter()
    for it in items:
        verify(parse(it["gold"]), parse(it["response"]))  # math-verify's own 5 s SIGALRM limits
    bare = time.perf_counter() - t0

    print(f"items: {len(items)}, workers: {workers}")
    print(f"cascade verify_many: {len(items) / cascade:.1f} responses/s ({cascade:.1f} s, timeouts {timeouts})")
    print(f"bare math-verify, 1 process: {len(items) / bare:.1f} responses/s ({bare:.1f} s)")
    print(f"speedup: {bare / cascade:.2f}x")
    print(f"slowest single item in process: {slowest[0]:.2f} s (gold {slowest[1]!r})")


if __name__ == "__main__":
    main()
