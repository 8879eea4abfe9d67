"""Grading cost on the 400 released responses, each graded once (no second copy to hit a cache):

- CPU per verdict of each grader in this process, against bare math-verify's CPU on the same items
  in the same process (`verify(parse(gold), parse(response))`): each after a first pass over the
  items (the parser's prediction tables warm, as in a long run), every cache emptied before each
  measured pass, the order alternating by round (`grading_cpu`, which bench/scale.py uses too);
- the wall rate of a worker pool on every core, per grader, and its workers' CPU per verdict,
  against bare math-verify's rate in one process.

Run: python bench/verifier.py [--rounds 2] [--graders paper,strict,extended] [--smoke]
Prints one JSON line; CPU figures are per verdict, in ms. Fails (exit 1) when the pool's grade of
an item differs from the same grader's in this process. ``--smoke``: 20 responses, strict, 1 round.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sympy  # noqa: E402
from math_verify import parse, verify  # noqa: E402

from oracleladder.runtime import frozen_heap  # noqa: E402
from oracleladder.schemas.types import GradeStatus  # noqa: E402
from oracleladder.verify import grade_all, verify_inprocess  # noqa: E402
from oracleladder.workers import WorkerPool  # noqa: E402

DATA = ROOT / "tests" / "data"  # the release's sample, shipped with the tests
GRADERS = ("paper", "strict", "extended")


def released(name: str, response: str, gold: str) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in (DATA / name).open()]
    return [{"response": r[response], "gold": r[gold], "problem": ""} for r in rows]


def clear_caches() -> None:
    """Empty every per-process cache of the grading code, math-verify and SymPy, so that each pass
    starts from the same state (the parser's own prediction tables stay as warm as they are)."""
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith(("oracleladder.verify", "math_verify")):
            for obj in list(vars(module).values()):
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()
    sympy.core.cache.clear_cache()


def _bare(item: dict[str, str]) -> None:
    verify(parse(item["gold"]), parse(item["response"]))  # math-verify's own 5 s SIGALRM limits


def _runner(name: str) -> Callable[[dict[str, str]], None]:
    """Bare math-verify ("bare") or a grader, on one item."""
    def grade(item: dict[str, str]) -> None:
        try:
            verify_inprocess(item["response"], item["gold"], grader=name, problem=item["problem"])
        except Exception:  # noqa: BLE001 - a crash is a verdict in the worker; its cost counts all the same
            pass
    return _bare if name == "bare" else grade


def _cpu_pass(run: Callable[[dict[str, str]], None], items: Sequence[dict[str, str]]) -> tuple[float, float]:
    """(CPU per item, slowest item's CPU), seconds, from empty caches."""
    clear_caches()
    slowest, t0 = 0.0, time.process_time()
    for item in items:
        t = time.process_time()
        run(item)
        slowest = max(slowest, time.process_time() - t)
    return (time.process_time() - t0) / len(items), slowest


def grading_cpu(items: Sequence[dict[str, str]], graders: Sequence[str], rounds: int) -> dict[str, Any]:
    """CPU per verdict (ms) of each grader and of bare math-verify on the same items, in this
    process, each in the steady state of a long run: after one pass of each over the items, whose
    parser prediction tables stay (every other cache is emptied before each measured pass), so each
    runs on tables it has warmed itself. Per round bare math-verify first or last by turns;
    medians over the rounds, ratios against the same round's bare."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for name in ("bare", *graders):
        _cpu_pass(_runner(name), items)
    load = os.getloadavg()[0]
    cpu: dict[str, list[float]] = {name: [] for name in ("bare", *graders)}
    ratio: dict[str, list[float]] = {grader: [] for grader in graders}
    slowest: dict[str, float] = {name: 0.0 for name in cpu}
    for r in range(rounds):
        order = ["bare", *graders] if r % 2 == 0 else [*graders, "bare"]
        this: dict[str, float] = {}
        for name in order:
            this[name], worst = _cpu_pass(_runner(name), items)
            cpu[name].append(this[name])
            slowest[name] = max(slowest[name], worst)
        for grader in graders:
            ratio[grader].append(this[grader] / this["bare"])
    return {"items": len(items), "rounds": rounds, "load_1min": [round(load, 1), round(os.getloadavg()[0], 1)],
            "cpu_ms_per_verdict": {k: round(1000 * statistics.median(v), 2) for k, v in cpu.items()},
            "over_bare": {k: round(statistics.median(v), 3) for k, v in ratio.items()},
            "slowest_item_ms": {k: round(1000 * v, 1) for k, v in slowest.items()}}


def cold_cpu(items: Sequence[dict[str, str]], grader: str) -> float:
    """CPU per verdict (s) of ``grader`` on ``items`` in a fresh process, as a run in one process
    grades them: its imports done and one answer graded (a pool's worker starts so too), the
    parser's tables and every cache empty, the collector off the imported libraries (as a run's is,
    and a worker's), each item once."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump([{k: item[k] for k in ("response", "gold", "problem")} for item in items], f)
        f.flush()
        out = subprocess.run([sys.executable, __file__, "--cold", f.name, "--graders", grader],
                             capture_output=True, text=True, check=True)
    return float(out.stdout)


def _cold_main(path: str, grader: str) -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    run = _runner(grader)
    run({"response": "\\boxed{0}", "gold": "1", "problem": ""})
    items = json.loads(Path(path).read_text())
    with frozen_heap():
        t0 = time.process_time()
        for item in items:
            run(item)
        print((time.process_time() - t0) / max(1, len(items)))


def workers_cpu() -> float:
    """CPU seconds of this process's ended children: a closed pool's workers."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def warm(pool: WorkerPool) -> None:
    """Every worker of ``pool`` up and one answer graded in each: the answers have distinct golds, so
    the pool's affinity (the gold) gives one to each worker (answers to one gold would all go to one)."""
    grade_all(pool, [{"response": "\\boxed{0}", "gold": str(i + 1)} for i in range(pool.size)])


def process_cpu_s(pid: int) -> float:
    """A live process's CPU seconds (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pool_cpu(items: Sequence[dict[str, str]], grader: str) -> float:
    """CPU per verdict (s) of a fresh worker pool on every core grading ``items`` (distinct, each sent
    once), its workers' start-up taken off exactly: up and one answer graded each (as `cold_cpu`'s
    process), the CPU they had then is subtracted from all they used by their end (a replacement's
    start-up counts: the pool pays it)."""
    cpu0 = workers_cpu()
    with WorkerPool(timeout_s=5.0) as pool:
        warm(pool)
        started = sum(process_cpu_s(pid) for pid in pool.pids())
        grade_all(pool, [{**item, "grader": grader} for item in items])
    return (workers_cpu() - cpu0 - started) / max(1, len(items))


def pool_startup_cpu(workers: int) -> float:
    """The workers' CPU for a pool that grades nothing but one answer each (their imports)."""
    t0 = workers_cpu()
    with WorkerPool(workers=workers) as pool:
        warm(pool)
    return workers_cpu() - t0


def pool_rates(items: Sequence[dict[str, str]], graders: Sequence[str]) -> dict[str, Any]:
    """Verdicts per second of a fresh worker pool on every core, per grader (its workers' caches
    start empty), its workers' CPU per verdict beside it (their start-up taken off), and bare
    math-verify's rate in one process."""
    workers = os.cpu_count() or 1
    startup = pool_startup_cpu(workers)
    rates: dict[str, Any] = {"workers": workers, "workers_startup_cpu_s": round(startup, 2)}
    for grader in graders:
        cpu0 = workers_cpu()
        with WorkerPool(workers=workers, timeout_s=5.0) as pool:
            warm(pool)
            t0 = time.perf_counter()
            verdicts = grade_all(pool, [{**item, "grader": grader} for item in items])
            wall = time.perf_counter() - t0
        rates[grader] = {"per_s": round(len(items) / wall, 1),
                         "workers_cpu_ms_per_verdict": round(1000 * (workers_cpu() - cpu0 - startup) / len(items), 2),
                         "timeouts": sum(v.status is GradeStatus.LIMIT for v in verdicts),
                         # a grade from the pool is the cascade's in process (a timeout is the load's)
                         "differ_in_process": sum(v != verify_inprocess(**item, grader=grader)
                                                  for item, v in zip(items, verdicts)
                                                  if v.status is GradeStatus.GRADED)}
    clear_caches()
    t0 = time.perf_counter()
    for item in items:
        _bare(item)
    rates["bare_per_s"] = round(len(items) / (time.perf_counter() - t0), 1)
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--graders", default=",".join(GRADERS))
    ap.add_argument("--smoke", action="store_true", help="20 responses, strict, 1 round: the checks, in seconds")
    ap.add_argument("--cold", metavar="ITEMS", help=argparse.SUPPRESS)  # cold_cpu's fresh process
    a = ap.parse_args()
    if a.cold:
        _cold_main(a.cold, a.graders)
        return
    if a.smoke:
        a.rounds, a.graders = 1, "strict"
    graders = a.graders.split(",")
    items = released("responses_sample.jsonl", "response_tail", "gold")[:20 if a.smoke else None]
    pool = pool_rates(items, graders)
    print(json.dumps({"cpu": grading_cpu(items, graders, a.rounds), "pool": pool}))
    differ = {g: pool[g]["differ_in_process"] for g in graders if pool[g]["differ_in_process"]}
    if differ:
        print(f"CHECK FAILED: the pool's grades differ from the same grader's in process: {differ}")
        sys.exit(1)


if __name__ == "__main__":
    main()
