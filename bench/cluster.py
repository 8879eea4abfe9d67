"""A grading-bound probe (long answers, a server with no latency) run plainly and on a local Ray
cluster of 2 workers, in the same process one after the other: the ratio of their times, the
cluster's start, and its overhead per job. Both runs must store the same rollouts (a grade the
same; a timeout, the machine's load, may fall on either).

    python bench/cluster.py [--families 20] [--k 2] [--words 1500] [--smoke]

``--smoke``: 2 families, k=1, short answers; it fails when the two runs store different rollouts
or a job fails, and skips (exit 0, saying so) where Ray cannot start.

On a 2-core machine the cluster grades on the same 2 cores as the plain run's verifier pool: a
speed-up is not the point; that nothing is lost and the overhead per job is small is.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracleladder import Endpoint, Experiment  # noqa: E402
from oracleladder.cluster import Cluster, ClusterError  # noqa: E402
from oracleladder.testing import LoopbackServer  # noqa: E402

FAMILIES = ROOT / "tests" / "data" / "families_sample.jsonl"
ROLLOUTS = ("SELECT pid, target, k, hex(call_key), label, reason FROM rollouts_named WHERE student = 'openai/bench' "
            "ORDER BY 1, 2, 3")


def long_answer(words: int):
    def answer(messages: list[dict], body: dict) -> str:
        n = len(messages[-1]["content"])
        steps = " ".join(f"step {i}: $x_{{{i}}} = \\frac{{{i} + {n}}}{{{i % 7 + 2}}}$" for i in range(words // 6))
        # a symbolic answer the grader must parse and compare, not an exact match
        return f"{steps}\nSo \\boxed{{\\frac{{x^2 + {n % 5}x}}{{x}} + \\sqrt{{{n % 9 + 2}}}}}"
    return answer


async def probe(store: Path, url: str, families: int, k: int, cluster: Cluster | None) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    async with Experiment(store, workers=2, cluster=cluster) as ex:
        started = time.perf_counter() - t0
        await ex.import_families(FAMILIES)
        # SymPy loaded in every verifier worker first, in both runs: the timed probe grades warm
        await ex.probe(Endpoint("openai/warm-up", base_urls=[url]), k=4, limit=2, stage0=False)
        t1 = time.perf_counter()
        result = await ex.probe(Endpoint("openai/bench", base_urls=[url], concurrency=8), k=k, limit=families)
        took = time.perf_counter() - t1
    assert not result.failed_jobs and not result.ungraded, result
    return started, took, result.usage.requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, default=20)
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--words", type=int, default=1500)
    parser.add_argument("--smoke", action="store_true", help="2 families, k=1, short answers: the checks, in seconds")
    a = parser.parse_args()
    if a.smoke:
        a.families, a.k, a.words = 2, 1, 120
    try:
        cluster = Cluster("local", workers=2, num_cpus=2)
    except ClusterError as exc:
        print(f"skipped: Ray cannot start here ({exc})")
        return
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(script=long_answer(a.words), max_lifetime=3600) as server:
        plain, spread = Path(tmp) / "plain.sqlite", Path(tmp) / "ray.sqlite"
        _, t_plain, jobs = asyncio.run(probe(plain, server.openai_base_url, a.families, a.k, None))
        start, t_ray, jobs_ray = asyncio.run(probe(spread, server.openai_base_url, a.families, a.k, cluster))
        stored = [sqlite3.connect(p).execute(ROLLOUTS).fetchall() for p in (plain, spread)]
    # the same jobs with the same grades; a timeout is the machine's load at the time, not the run's
    graded = [[r if r[-1] != "timeout" else r[:4] for r in rows] for rows in stored]
    differ = sum(a != b and len(a) == len(b) for a, b in zip(*graded))
    if [r[:4] for r in stored[0]] != [r[:4] for r in stored[1]] or differ or jobs != jobs_ray:
        print(f"CHECK FAILED: the two runs stored different rollouts ({len(stored[0])} and {len(stored[1])}, "
              f"{differ} graded differently, {jobs} and {jobs_ray} requests)")
        sys.exit(1)
    print(f"{jobs} jobs ({a.families} families, k={a.k}, answers of ~{a.words} words), the same rollouts both ways")
    print(f"plain: {t_plain:.1f} s ({1000 * t_plain / jobs:.1f} ms/job)")
    print(f"ray, 2 local workers: {t_ray:.1f} s ({1000 * t_ray / jobs:.1f} ms/job), after {start:.1f} s to start")
    print(f"ratio ray/plain {t_ray / t_plain:.2f}; overhead per job {1000 * (t_ray - t_plain) / jobs:+.1f} ms")


if __name__ == "__main__":
    main()
