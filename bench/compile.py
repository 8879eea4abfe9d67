"""Compile benchmark: N math problems compiled as a user does, through the Python API
(`Experiment.compile`, which `ladder compile` runs: a pool file, a real SQLite store in a temp file,
the real worker pool, validators, independent solve on), against the loopback server in its own
process (scripted teacher, fixed latency), client concurrency 64.

A third of the problems get a first plan the validators reject and a valid plan on the re-ask; the
independent-solve calls answer every milestone with its gold. The benchmark counts the requests the
server received (its /stats), prints wall / ideal with ideal = requests x latency / concurrency, the
client's CPU (and the verifier workers' and server's), and checks every problem compiled with the
right number of attempts, every attempt stored. For reference it then measures the floor of this
machine in the same run: as many plain calls from a bare aiohttp loop, same server, same concurrency.

    python bench/compile.py [--n 1000] [--latency 0.1] [--concurrency 64] [--spaced-every N] [--repeat 1]
                            [--profile OUT.prof] [--smoke]

``--smoke``: 6 problems at 5 ms; the checks fail it (exit 1), the wall target does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _teacher_script import failing, problem  # noqa: E402
from orchestration import raw_baseline  # noqa: E402

from oracleladder import Endpoint, Experiment  # noqa: E402
from oracleladder.testing.processes import remote_stats, spawn  # noqa: E402

TEACHER = "openai/bench-teacher"

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds) for every process we can read."""
    out: dict[int, tuple[int, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def cpu_tree(root: int, exclude: set[int] = frozenset()) -> float:  # type: ignore[assignment]
    """CPU seconds of the live descendants of ``root`` (not root itself), skipping ``exclude`` subtrees."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, stack = 0.0, [c for c in children.get(root, []) if c not in exclude]
    while stack:
        pid = stack.pop()
        total += table[pid][1]
        stack.extend(c for c in children.get(pid, []) if c not in exclude)
    return total


def cpu_of(pid: int) -> float:
    return _proc_table().get(pid, (0, 0.0))[1]


def start_server(latency: float, spaced_every: int = 0) -> tuple[subprocess.Popen, int]:
    return spawn([sys.executable, str(ROOT / "bench" / "_teacher_script.py"), "--latency", str(latency),
                  "--max-lifetime", "1800", "--spaced-every", str(spaced_every)], cwd=ROOT)


def write_pool(path: Path, first: int, n: int) -> Path:
    """Problems first .. first + n - 1 as a JSONL pool, the file `ladder compile` reads."""
    path.write_text("".join(json.dumps(problem(i)) + "\n" for i in range(first, first + n)))
    return path


async def run_once(a: argparse.Namespace, port: int, server_pid: int, rep: int) -> dict:
    lat, conc = a.latency, a.concurrency
    tmp = Path(tempfile.mkdtemp(prefix="ladder-bench-compile-"))
    teacher = Endpoint(TEACHER, base_urls=[f"http://127.0.0.1:{port}/v1"], concurrency=conc)
    # fresh problem numbers per repetition (and for the warm-up): nothing is shared or cached across runs
    base = 20 + rep * (a.n + 20)
    async with Experiment(tmp / "compile.sqlite", workers=a.workers) as ex:
        # warm-up (imports, the response models' schemas, the pool's first SymPy calls), not timed
        await ex.compile(write_pool(tmp / "warm-up.jsonl", base - 12, 12), teacher)
        pool = write_pool(tmp / "pool.jsonl", base, a.n)
        remote_stats(port, reset=True)
        profiler = None
        if a.profile:
            import cProfile

            profiler = cProfile.Profile()
        c0, w0, s0 = cpu_self(), cpu_tree(os.getpid(), {server_pid}), cpu_of(server_pid)
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        summary = await ex.compile(pool, teacher)
        if profiler:
            profiler.disable()
        wall = time.perf_counter() - t0
        dcpu = cpu_self() - c0
        dworkers = cpu_tree(os.getpid(), {server_pid}) - w0
        dserver = cpu_of(server_pid) - s0
        if profiler:
            profiler.dump_stats(a.profile)
        st = remote_stats(port)

        # ---- checks: every problem compiled, with the right attempt counts, every attempt stored
        failed = {**summary.failed_why, **summary.infrastructure_failed_why}
        bad = [f"{pid}: {why}" for pid, why in failed.items()]
        attempts_hist: Counter[int] = Counter()
        for i in range(base, base + a.n):
            want, pid = 2 if failing(i) else 1, problem(i)["pid"]
            stored = await ex.store.compile_attempts(pid, TEACHER, granularity="default")
            attempts_hist[len(stored)] += 1
            if ([s.passed for s in stored] != [False] * (want - 1) + [True]
                    or [s.attempt for s in stored] != list(range(want))
                    or any(not s.errors for s in stored[:-1]) or stored[-1].errors):
                bad.append(f"{pid}: stored attempts {[(s.attempt, s.passed, len(s.errors)) for s in stored]} "
                           f"(want {want})")
    # the floor: as many plain calls, at the same concurrency, from a bare aiohttp loop
    floor = await raw_baseline(port, st["total"], conc)
    with closing(sqlite3.connect(tmp / "compile.sqlite")) as db:  # the file as written (warm-up problems included)
        n_fam = db.execute("SELECT COUNT(*) FROM families WHERE source = ?", (TEACHER,)).fetchone()[0]
        n_att = db.execute("SELECT COUNT(*) FROM compile_attempts WHERE source = ?", (TEACHER,)).fetchone()[0]
    shutil.rmtree(tmp, ignore_errors=True)
    want_att = sum(2 if failing(i) else 1 for i in range(base - 12, base + a.n))
    if n_fam != a.n + 12:
        bad.append(f"store holds {n_fam} families, want {a.n + 12}")
    if n_att != want_att:
        bad.append(f"store holds {n_att} compile attempts, want {want_att}")

    # expected requests: 2 solve calls per valid plan, 1 plan call per attempt
    want_req = sum((2 if failing(i) else 1) + 2 for i in range(base, base + a.n))
    requests = st["total"]
    ideal = requests * lat / conc
    return {"wall": wall, "ideal": ideal, "ratio": wall / ideal, "floor": floor / ideal, "requests": requests, "want_requests": want_req,
            "max_per_body": st["max_per_body"], "client_cpu": dcpu, "workers_cpu": dworkers,
            "server_cpu": dserver, "attempts": dict(sorted(attempts_hist.items())), "bad": bad,
            "client_requests": summary.usage.requests, "retries": summary.usage.retries}


async def main_async(a: argparse.Namespace) -> int:
    proc, port = start_server(a.latency, a.spaced_every)
    failures = 0
    try:
        print(f"N={a.n} problems, latency={a.latency * 1000:.0f}ms, client concurrency={a.concurrency}, "
              "through Experiment.compile (as `ladder compile`), "
              f"spaced solve answers {f'every {a.spaced_every}th problem' if a.spaced_every else 'none'}, "
              f"verifier workers={a.workers or os.cpu_count()}, cores={os.cpu_count()} "
              f"(server: own process on 127.0.0.1:{port})")
        ratios = []
        for rep in range(a.repeat):
            r = await run_once(a, port, proc.pid, rep)
            ratios.append(r["ratio"])
            per = r["requests"] or 1
            print(f"  run {rep + 1}: wall {r['wall']:6.2f}s  ideal {r['ideal']:5.2f}s  wall/ideal {r['ratio']:5.2f}x  "
                  f"requests {r['requests']} (expected {r['want_requests']}, max per body {r['max_per_body']}, "
                  f"retries {r['retries']})  client CPU {r['client_cpu']:5.2f}s ({r['client_cpu'] / per * 1000:.2f} ms/request)  "
                  f"verifier workers CPU {r['workers_cpu']:5.2f}s  server CPU {r['server_cpu']:5.2f}s  "
                  f"attempts {r['attempts']}")
            print(f"    raw aiohttp floor, {r['requests']} plain calls at the same concurrency: {r['floor']:5.2f}x ideal")
            if r["requests"] != r["want_requests"]:
                r["bad"].append(f"server saw {r['requests']} requests, want {r['want_requests']}")
            if r["bad"]:
                failures += 1
                print(f"    CHECK FAILED ({len(r['bad'])}): " + "; ".join(r["bad"][:5]))
            else:
                print(f"    checks: all {a.n} compiled, attempts 2 for the failing third and 1 for the rest, "
                      "every attempt stored")
        if len(ratios) > 1:
            print(f"  wall/ideal over {len(ratios)} runs: min {min(ratios):.2f}x  median "
                  f"{sorted(ratios)[len(ratios) // 2]:.2f}x  max {max(ratios):.2f}x  (target <= 1.15x)")
        else:
            print(f"  target wall/ideal <= 1.15x: {'met' if ratios[0] <= 1.15 else 'MISSED'}")
    finally:
        proc.terminate()
        proc.wait(5)
    return 1 if failures else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None, help="verifier pool workers (default: cores)")
    ap.add_argument("--spaced-every", type=int, default=0,
                    help="every N-th problem's solve answers equal the gold only up to spacing (graded by the pool)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", default=None, help="cProfile the timed compile into this file")
    ap.add_argument("--smoke", action="store_true", help="6 problems at 5 ms: the checks, in seconds")
    a = ap.parse_args()
    if a.smoke:
        a.n, a.latency, a.repeat = 6, 0.005, 1
    sys.exit(asyncio.run(main_async(a)))


if __name__ == "__main__":
    main()
