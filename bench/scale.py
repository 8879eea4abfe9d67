"""Scale benchmark: the paper's probe workload for one student against the loopback server (its own
process), through the real prober, Client, SQLite store and worker pool.

354 families (the released sample families repeated under new pids), all six conditions and Stage
0, K=8. Each answer is one released response (responses_sample.jsonl) lengthened from that run's
4K-token budget to 16K the way a longer budget lengthens it (oracleladder.testing.answers): a
response to the problem the prompt states where the sample holds one (25 of the 55 problems), any
released response otherwise. Checks its computation (exit code 1 when a check fails): every job
of the plan is asked, stored and graded, or counted as left out by the leak rule (milestones whose
gold restates the reference answer) or for an unusable reference answer; the pool's grades of the
stored answers are the probe's; the CPU read for each of the probe's processes fits what the cores
had meanwhile. Reports, and checks against its targets (exit code 1 when one is missed, except
with --smoke):

- wall time against the largest of three lower bounds measured in the same run: calls x latency /
  concurrency; the time the worker pool takes to grade the same answers on all cores; and the CPU
  the probe's processes used over it (this process, the stand-in server, the pool's workers) over
  the cores, which cannot give them more (target: within 1.2x). Beside it, the cores' time other
  processes took meanwhile (the machine's load), and this process's CPU per call against the
  Client's alone (bench/orchestration.py's `client_run`: the probe's own requests, a store of its
  own, the same server, as many calls in flight), so that the third bound hides no waste of the
  run's own (target: at most 2x);
- store bytes per rollout against the zstd-compressed size of its answer (target: at most 1.2x);
- the process's resident memory: its peak over the whole run against its peak over the first 10%
  (target: within 20%);
- the worker pool's CPU per verdict against one process grading the same answers from its start,
  its parser's tables empty as a worker's are (target: at most 1.5x): the answers the pool is sent
  (those `grade` does not settle without a worker: no exact match, one of each verdict key), graded
  by a fresh pool (bench/verifier.py's `pool_cpu`, its workers' start-up taken off) and by a fresh
  process (`cold_cpu`), both up and warmed by one answer; --pool-rounds pairs, the order alternating,
  the target read on the median ratio (one pair on a shared machine is noise). Beside it, against the
  same grader with its tables warm from a first pass over the very same answers (`grading_cpu`),
  which no run that grades each answer once has.

Beside them, the grading's CPU per verdict by grader in this process against bare math-verify's on
the same answers (bench/verifier.py's `grading_cpu`), and the grading ideal at the paper's size
extrapolated from this run's (`--scale 1.0` measures it).

    python bench/scale.py [--scale 1.0] [--latency 0.1] [--concurrency 64] [--graders G,..|none]
                          [--cpu-rounds 1] [--pool-rounds 3] [--smoke]

``--scale 0.1`` runs a tenth of the families. The figures are printed last. ``--smoke`` runs 2
families with 5 ms of latency and the strict grader only (seconds): the checks fail it, the
targets do not (their figures mean nothing at that size). ``--graders none`` leaves out the
comparison with bare math-verify (at ``--scale 1.0`` its two passes take half an hour).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestration import client_run, cpu as rusage_cpu  # noqa: E402 - bench/orchestration.py
from verifier import GRADERS, cold_cpu, grading_cpu, pool_cpu, process_cpu_s, warm  # noqa: E402 - bench/verifier.py

from oracleladder import Endpoint, Experiment  # noqa: E402
from oracleladder.clients import ChatRequest  # noqa: E402
from oracleladder.domains import MathDomain  # noqa: E402
from oracleladder.probe.runner import ProbeConfig, asked_jobs  # noqa: E402
from oracleladder.runtime import frozen_heap, jobs_in_flight  # noqa: E402
from oracleladder.schemas import Family, to_released  # noqa: E402
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl  # noqa: E402
from oracleladder.schemas.types import GradeStatus  # noqa: E402
from oracleladder.store import Store  # noqa: E402
from oracleladder.testing.answers import ReleasedAnswers  # noqa: E402
from oracleladder.testing.loopback import LoopbackServer  # noqa: E402
from oracleladder.testing.processes import remote_stats, spawn  # noqa: E402
from oracleladder.validators.leak import leaking_milestones  # noqa: E402
from oracleladder.verify import grade  # noqa: E402
from oracleladder.verify.extract import all_boxed  # noqa: E402
from oracleladder.verify.graders import exact_match  # noqa: E402
from oracleladder.verify.pool import verdict_key  # noqa: E402
from oracleladder.workers import WorkerPool  # noqa: E402

DATA = ROOT / "tests" / "data"  # the release's sample, shipped with the tests
PAPER_FAMILIES = 354
K = 8
BUDGET_SCALE = 16384 / 4096  # the sample's responses had a 4K-token budget; the paper's probe 16K
TARGET_WALL, TARGET_BYTES, TARGET_RSS, TARGET_POOL, TARGET_RUN = 1.2, 1.2, 1.2, 1.5, 2.0
CLIENT_CALLS = 4096  # calls of the Client alone (CPU per call is steady long before)


# ---------------------------------------------------------------- the server process

class Answers:
    """The student: for each prompt (and each time it is asked) one released response to the problem
    the prompt states (any response where the sample holds none), lengthened to the 16K budget."""

    def __init__(self) -> None:
        self.answers = ReleasedAnswers([json.loads(line) for line in (DATA / "responses_sample.jsonl").open()],
                                       BUDGET_SCALE)
        self.problems = {statement(f): f.pid for f in read_jsonl(DATA / "families_sample.jsonl", Family)}
        self.asked: collections.Counter[str] = collections.Counter()

    def __call__(self, messages: list[dict], body: dict) -> str:
        prompt = str(messages[-1]["content"])  # a condition's or a milestone's: both state the problem
        self.asked[prompt] += 1
        pid = next((pid for problem, pid in self.problems.items() if problem in prompt), "")
        return self.answers(pid, f"{prompt}#{self.asked[prompt]}")


def statement(family: Family) -> str:
    """The problem's own text: a released parent prompt is `...Problem:\\n<statement>`."""
    return family.parent_prompt.split("Problem:\n", 1)[-1].strip()


def serve_main(a: argparse.Namespace) -> None:
    LoopbackServer(script=Answers(), latency=a.latency, max_lifetime=a.max_lifetime).serve(a.port_file)


# ---------------------------------------------------------------- the client process

def bytes_by_table(path: Path) -> dict[str, int]:
    """The file's bytes per table and index (SQLite's dbstat), largest first; {} where SQLite lacks dbstat."""
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        con.close()
    return dict(rows)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_parts() -> str:
    """The resident memory's parts: the process's own (anon) and mapped files (libraries, the store)."""
    with open("/proc/self/status") as f:
        kb = dict(line.split(":", 1) for line in f if line.startswith(("RssAnon", "RssFile", "RssShmem")))
    return ", ".join(f"{k[3:].lower()} {int(v.split()[0]) / 1024:.1f}" for k, v in kb.items())


class RssSampler:
    """The process's resident memory every ``interval`` s, with the run's progress at that time;
    a line at every tenth of ``total`` rollouts."""

    def __init__(self, total: int, interval: float = 0.2) -> None:
        self.total = total
        self.interval = interval
        self.done = 0
        self.samples: list[tuple[int, int]] = []  # (rollouts done, rss)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        tenth = 1
        while not self._stop.wait(self.interval):
            self.samples.append((self.done, rss_bytes()))
            if self.done >= tenth * self.total / 10:
                print(f"{tenth * 10:3d}%: {self.done} rollouts, RSS {self.samples[-1][1] / 2**20:.1f} MB "
                      f"({rss_parts()})", flush=True)
                tenth = 10 * self.done // self.total + 1

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((self.done, rss_bytes()))


def cores_s() -> tuple[float, float, float]:
    """Seconds of all cores since boot: (busy, idle, stolen by the hypervisor), from /proc/stat."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, (idle + iowait) / tick, steal / tick


class ProbeCpu:
    """The CPU each of the probe's processes used over it: this one (every thread), the stand-in
    server and the pool's workers (started in the probe: those alive at its end, and those it ended,
    read as this process's ended children); and the cores' busy, idle and stolen time meanwhile."""

    def __init__(self, server: int) -> None:
        self.server = server
        self.start = self._now()

    def _now(self) -> tuple[float, ...]:
        return (time.perf_counter(), rusage_cpu(resource.RUSAGE_SELF), rusage_cpu(resource.RUSAGE_CHILDREN),
                process_cpu_s(self.server), *cores_s())

    def end(self, workers: list[int]) -> dict[str, float]:
        wall, run, ended, server, busy, idle, steal = (b - a for a, b in zip(self.start, self._now()))
        workers_s = ended + sum(process_cpu_s(p) for p in workers)
        return {"over_s": wall, "run_s": run, "server_s": server, "workers_s": workers_s, "cores_busy_s": busy,
                "cores_idle_s": idle, "cores_stolen_s": steal, "others_s": busy - run - server - workers_s}


async def client_alone(port: int, requests: list[ChatRequest], concurrency: int) -> float:
    """CPU per call (s) of the Client alone on ``requests`` against the server on ``port``, caching in a
    store of its own (every call asked, claimed and stored, as in the probe), as many calls in flight
    as the probe keeps jobs; the collector frozen as in a run."""
    with tempfile.TemporaryDirectory(prefix="ladder-scale-client-") as tmp:
        store = await Store.open(Path(tmp) / "client.sqlite")
        try:
            with frozen_heap():
                _, cpu, _, _ = await client_run(port, requests, concurrency, "auto", store, jobs_in_flight(concurrency))
        finally:
            await store.close()
    return cpu / max(1, len(requests))


def fits(used: dict[str, float], cores: int) -> bool:
    """Whether ``ProbeCpu``'s parts are what the cores had: each process's CPU a cost, their sum within
    the cores' busy time, and busy, idle and stolen time the cores' whole (to the clock ticks)."""
    processes = used["run_s"] + used["server_s"] + used["workers_s"]
    whole = used["cores_busy_s"] + used["cores_idle_s"] + used["cores_stolen_s"]
    slack = 0.02 * cores * used["over_s"] + 0.05 * cores
    return (min(used["run_s"], used["server_s"], used["workers_s"]) > 0 and processes <= used["cores_busy_s"] + slack
            and abs(whole - cores * used["over_s"]) <= slack)


def families(n: int) -> list[Family]:
    """``n`` families: the released sample families, repeated under new pids. A repeat's problem and
    milestone bodies say which copy they are, so no two families share a prompt (shared prompts would
    share their calls, which the paper's distinct problems never do)."""
    base = list(read_jsonl(DATA / "families_sample.jsonl", Family))
    return [_copy(base[i % len(base)], i // len(base)) for i in range(n)]


# A released milestone prompt ends its body here. The mark goes inside the body, from which a released
# family's sub-goal descriptions are read (probe.prompts.description): marked at the prompt's end, the
# copies of a family had the same descriptions once stored, and a C2_random that drew a copy of its
# own family as donor asked C2_descriptions' prompt (56 of 23,544 calls shared at --scale 1.0).
BODY_END = "\n\nOutput instruction:"


def _copy(family: Family, copy: int) -> Family:
    mark = f"\n\n(Copy {copy} of this problem.)" if copy else ""
    return family.model_copy(update={
        "pid": f"{family.pid}-scale{copy}", "parent_prompt": family.parent_prompt + mark,
        "milestones": [m.model_copy(update={"prompt": m.prompt.replace(BODY_END, mark + BODY_END, 1)})
                       for m in family.milestones]})


def planned(fams: list[Family], config: ProbeConfig) -> dict[str, int]:
    """The probe's plan for ``fams`` as `ladder import` and `ladder probe` make it: every job, those the
    leak rule leaves out (`Family.leaking`, set on import), those of the families whose reference
    answer is unusable (their parent jobs are skipped), and the jobs asked."""
    domain = MathDomain()
    every = domain.plan_jobs(fams, config, fams)
    marked = [f.model_copy(update={"leaking": leaking_milestones(f)}) for f in fams]
    kept = domain.plan_jobs(marked, config, marked)
    asked = asked_jobs(kept, config, {f.pid for f in marked if domain.ungradable(f, config.use_corrections)})
    return {"jobs": len(every), "left_out_leak": len(every) - len(kept), "left_out_unusable": len(kept) - len(asked),
            "asked": len(asked)}


async def stored_answers(path: Path, fams: list[Family]) -> list[dict]:
    """Every stored answer with the gold and problem it is graded against, and the probe's verdict."""
    by_pid = {f.pid: f for f in fams}
    store = await Store.open(path)
    try:
        return [{"response": r.response, "gold": _gold(by_pid[r.pid], r.target), "problem": by_pid[r.pid].parent_prompt,
                 "verdict": r.verdict} for r in await store.rollouts()]
    finally:
        await store.close()


async def asked(path: Path, n: int) -> list[ChatRequest]:
    """The first ``n`` requests of the calls in the store at ``path`` (a new one: the probe's)."""
    store = await Store.open(path)
    try:
        return [ChatRequest(**c.request) for c in (await store.calls())[:n]]
    finally:
        await store.close()


async def grading_time(items: list[dict], grader: str) -> tuple[float, list]:
    """Seconds the worker pool takes, on all cores, to grade every stored answer again as the probe
    does (`grade`), and its verdicts."""
    with WorkerPool() as pool:
        warm(pool)
        t0 = time.perf_counter()
        verdicts = await asyncio.gather(*(grade(pool, it["response"], it["gold"], grader=grader, problem=it["problem"])
                                          for it in items))
        wall = time.perf_counter() - t0
    return wall, verdicts


def sent(items: list[dict], grader: str) -> list[dict]:
    """The answers of ``items`` that `grade` sends to a worker: not settled by an exact match, the
    first of each verdict key (the pool's memo gives the others that grade)."""
    out: dict[object, dict] = {}
    for i, it in enumerate(items):
        item = {"response": it["response"], "gold": it["gold"], "problem": it["problem"], "grader": grader}
        if exact_match(it["response"], it["gold"]) is None:
            out.setdefault(verdict_key(item) or i, item)
    return list(out.values())


def paired_cpu(items: list[dict], grader: str, rounds: int) -> dict:
    """CPU per verdict (ms) of a fresh pool and of a fresh process on the same ``items``, ``rounds``
    pairs, the pool first in even rounds and last in odd ones; each pair's ratio, and the medians."""
    pool, cold = [], []
    for r in range(rounds):
        first, second = (pool_cpu, cold_cpu) if r % 2 == 0 else (cold_cpu, pool_cpu)
        x, y = first(items, grader), second(items, grader)
        pool.append(1000 * (x if first is pool_cpu else y))
        cold.append(1000 * (y if first is pool_cpu else x))
    ratios = [p / c for p, c in zip(pool, cold)]
    return {"pool_ms": [round(v, 2) for v in pool], "cold_ms": [round(v, 2) for v in cold],
            "ratios": [round(v, 3) for v in ratios], "pool_ms_median": round(statistics.median(pool), 2),
            "cold_ms_median": round(statistics.median(cold), 2), "ratio_median": round(statistics.median(ratios), 3)}


def _gold(family: Family, target: str) -> str:
    return family.milestones[int(target[1:])].answer if target.startswith("m") else family.reference_answer()


async def run(a: argparse.Namespace) -> int:
    fams = families(max(1, round(PAPER_FAMILIES * a.scale)))
    # every condition, named as `ladder probe` names them (the skip of unusable parents reads them)
    config = ProbeConfig(student="openai/scale-student", k=K, max_tokens=16384, conditions=tuple(MathDomain().conditions))
    plan = planned(fams, config)
    n_jobs = plan["asked"]
    proc, port = spawn([sys.executable, str(Path(__file__).resolve()), "--serve", "--latency", str(a.latency),
                        "--max-lifetime", "3600"], cwd=ROOT)
    tmp = Path(tempfile.mkdtemp(prefix="ladder-scale-"))
    path = tmp / "scale.sqlite"
    try:
        print(f"{len(fams)} families, {plan['jobs']} jobs (all six conditions and Stage 0, K={K}): {n_jobs} asked, "
              f"{plan['left_out_leak']} left out by the leak rule, {plan['left_out_unusable']} for an unusable "
              f"reference answer; latency {a.latency * 1000:.0f} ms, concurrency {a.concurrency}, "
              f"{os.cpu_count()} cores", flush=True)
        write_jsonl(tmp / "families.jsonl", (to_released(f) for f in fams))
        student = Endpoint(config.student, base_urls=[f"http://127.0.0.1:{port}/v1"], concurrency=a.concurrency)
        with RssSampler(n_jobs) as rss:
            @contextmanager
            def progress(description: str, total: int, client: object) -> Iterator[Callable[[object], None]]:
                def done(_: object) -> None:
                    rss.done += 1

                yield done

            async with Experiment(path) as ex:  # what `ladder import` and `ladder probe` do
                await ex.import_families(tmp / "families.jsonl")
                meter = ProbeCpu(proc.pid)
                t0 = time.perf_counter()
                summary = await ex.probe(student, k=config.k, max_tokens=config.max_tokens, progress=progress)
                wall = time.perf_counter() - t0
                used = meter.end(ex.pool.pids())
                stored = await ex.store.rollout_count(run_id=summary.run_id)
                ungraded = await ex.store.rollout_count(run_id=summary.run_id, status=GradeStatus.UNGRADED)
        (tmp / "families.jsonl").unlink()
        requests = remote_stats(port)["total"]
        client_s = await client_alone(port, await asked(path, CLIENT_CALLS), a.concurrency)
        items = await stored_answers(path, fams)
        grading, regraded = await grading_time(items, config.grader)
    finally:
        proc.terminate()
        proc.wait(5)
    size = sum(p.stat().st_size for p in tmp.iterdir() if p.name.startswith("scale.sqlite"))
    by_table = bytes_by_table(path)
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()

    responses = [it["response"] for it in items]
    load = [round(os.getloadavg()[0], 1)]
    to_send = sent(items, config.grader)
    pair = paired_cpu(to_send, config.grader, a.pool_rounds)
    graders = [] if a.graders == "none" else a.graders.split(",")
    cpu = grading_cpu(items, graders, a.cpu_rounds) if graders else {"cpu_ms_per_verdict": {}}
    load.append(round(os.getloadavg()[0], 1))
    pool_ms, cold_ms = pair["pool_ms_median"], pair["cold_ms_median"]
    cores = os.cpu_count() or 1
    paper_families = families(PAPER_FAMILIES)
    paper_jobs = planned(paper_families, config)["asked"]
    calls_ideal = requests * a.latency / a.concurrency
    # the cores cannot give the probe's processes more than their number of CPU seconds a second: with the
    # stand-in server (on these cores here; a real provider's are elsewhere, the figure without it beside)
    probe_cpu = used["run_s"] + used["server_s"] + used["workers_s"]
    cpu_ideal = probe_cpu / cores
    ideal = max(calls_ideal, grading, cpu_ideal)
    run_ms, client_ms = 1000 * used["run_s"] / max(1, requests), 1000 * client_s
    per_rollout = size / max(1, stored)
    compressed = statistics.fmean(len(zstandard.compress(t.encode(), 3)) for t in responses)
    early = [r for d, r in rss.samples if d <= 0.1 * n_jobs] or [rss.samples[0][1]]
    rss_early, rss_peak = max(early), max(r for _, r in rss.samples)
    figures = {
        "families": len(fams), **plan, "calls": requests, "rollouts": stored, "wall_s": round(wall, 2),
        "ideal_calls_s": round(calls_ideal, 2), "ideal_grading_s": round(grading, 2), "ideal_cpu_s": round(cpu_ideal, 2),
        "wall_over_ideal": round(wall / ideal, 3), "probe_cpu": {k: round(v, 2) for k, v in used.items()},
        "ideal_cpu_without_server_s": round((probe_cpu - used["server_s"]) / cores, 2),
        "run_cpu_ms_per_call": round(run_ms, 3), "client_alone_cpu_ms_per_call": round(client_ms, 3),
        "run_over_client_alone": round(run_ms / client_ms, 2) if client_ms else None,
        "store_bytes_per_rollout": round(per_rollout), "zstd_response_bytes": round(compressed),
        "bytes_over_zstd": round(per_rollout / compressed, 3),
        "mean_response_chars": round(statistics.fmean(len(t) for t in responses)),
        "answers_with_several_boxes": round(statistics.fmean(len(all_boxed(t)) > 1 for t in responses), 3),
        "grading_cpu": cpu, "load_1min_cpu_passes": load,
        "sent_to_workers": len(to_send), f"pool_vs_one_process_{config.grader}": pair,
        "pool_over_in_process_cold": pair["ratio_median"],
        "pool_over_in_process_warm": (round(pool_ms / cpu["cpu_ms_per_verdict"][config.grader], 2)
                                      if config.grader in cpu["cpu_ms_per_verdict"] else None),
        "timeouts": {"probe": sum(it["verdict"].status is GradeStatus.LIMIT for it in items),
                     "pool_regrade": sum(v.status is GradeStatus.LIMIT for v in regraded)},
        "paper_size_grading_s": {
            "pool_extrapolated": round(grading * paper_jobs / max(1, stored), 1),
            # the answers sent, as a share of those stored, times the paper's jobs
            **{f"{name}_cpu_on_{cores}_cores": round(ms / 1000 * len(to_send) / max(1, stored) * paper_jobs / cores, 1)
               for name, ms in (("pool_workers", pool_ms), (f"one_process_{config.grader}", cold_ms))},
            **{f"cpu_{g}_on_{cores}_cores": round(ms / 1000 * paper_jobs / cores, 1)
               for g, ms in cpu["cpu_ms_per_verdict"].items()}},
        "rss_mb_at_10pct": round(rss_early / 2**20, 1), "rss_mb_peak": round(rss_peak / 2**20, 1),
        "rss_growth": round(rss_peak / rss_early, 3),
        "store_bytes_per_rollout_by_btree": {name: round(n / max(1, stored)) for name, n in by_table.items()},
    }
    # a grade is a function of the answer; a timeout is also one of the machine's load at the time
    graded_twice = [(it["verdict"], v) for it, v in zip(items, regraded)
                    if it["verdict"].status is v.status is GradeStatus.GRADED]
    changed = sum(a != b for a, b in graded_twice)
    failed = [name for name, ok in (
        (f"{stored} rollouts stored and {requests} calls of {n_jobs} jobs asked", stored == n_jobs == requests),
        (f"{ungraded} answers ungraded", ungraded == 0),
        (f"the pool's grades of the stored answers differ from the probe's on {changed} of {len(graded_twice)}",
         changed == 0),
        (f"a CPU measure of the pairs is not a cost: pool {pair['pool_ms']} ms, one process {pair['cold_ms']} ms",
         min(pair["pool_ms"] + pair["cold_ms"]) > 0 or not to_send),
        (f"the probe's CPU parts are not costs its {cores} cores had: {figures['probe_cpu']}, the Client alone "
         f"{client_ms:.3f} ms a call", fits(used, cores) and client_ms > 0),
    ) if not ok]
    misses = [name for name, ok in (
        (f"wall {figures['wall_over_ideal']}x the largest ideal (target {TARGET_WALL}x)", wall <= TARGET_WALL * ideal),
        (f"store {figures['bytes_over_zstd']}x the compressed answer (target {TARGET_BYTES}x)",
         per_rollout <= TARGET_BYTES * compressed),
        (f"peak RSS {figures['rss_growth']}x its peak at 10% (target {TARGET_RSS}x)", rss_peak <= TARGET_RSS * rss_early),
        (f"the pool's workers {pair['ratio_median']}x (median of {pair['ratios']}) the CPU of one process "
         f"grading the same answers from its start (target {TARGET_POOL}x)", pair["ratio_median"] <= TARGET_POOL),
        (f"the run's CPU per call {figures['run_over_client_alone']}x the Client's alone (target {TARGET_RUN}x)",
         run_ms <= TARGET_RUN * client_ms),
    ) if not ok]
    for name in failed:
        print(f"CHECK FAILED: {name}")
    for miss in misses:
        print(f"MISSED{' (not a failure with --smoke)' if a.smoke else ''}: {miss}")
    print(json.dumps(figures))
    return 1 if failed or (misses and not a.smoke) else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the 354 families")
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--graders", default=",".join(GRADERS),
                    help="graders whose CPU per verdict is measured against bare math-verify's; none: not measured")
    ap.add_argument("--cpu-rounds", type=int, default=1, help="rounds of the CPU measurement (bench/verifier.py)")
    ap.add_argument("--pool-rounds", type=int, default=3, help="pairs of pool and one process on the same answers")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # run as the server process
    ap.add_argument("--max-lifetime", type=float, default=3600.0, help=argparse.SUPPRESS)
    ap.add_argument("--port-file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help="2 families, 5 ms latency, strict only: the checks, in seconds")
    a = ap.parse_args()
    if a.smoke:
        a.scale, a.latency, a.graders, a.pool_rounds = 2 / PAPER_FAMILIES, 0.005, "strict", 1
    if a.serve:
        serve_main(a)
        return
    sys.exit(asyncio.run(run(a)))


if __name__ == "__main__":
    main()
