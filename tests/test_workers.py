"""The generic worker pool: tasks known by name, registered by the code that owns them, imported by a
worker before their first call (never within its limit); a call's result, or a failure that says
which (its limit, its raise, its worker dying twice), never a wrong result; and the pool handed to a
domain, or started by it for a block."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import textwrap
from pathlib import Path

import pytest

import oracleladder.workers.pool as pool_module
from oracleladder.domains import CodeDomain, MathDomain
from oracleladder.verify import GradingFailed
from oracleladder.workers import TaskRaised, TaskTimedOut, WorkerDied, WorkerPool, WorkersUnavailable, register_task

TASKS = """
    import gc, os, time

    def echo(**kwargs):
        return {"pid": os.getpid(), **kwargs}

    def fail(why):
        raise ValueError(why)

    def hang(seconds):
        time.sleep(seconds)

    def die(code):
        os._exit(code)

    def frozen():
        return os.getpid(), gc.get_freeze_count()

    def spin(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        return os.getpid()
"""


@pytest.fixture
def tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module of tasks the workers can import (on their PYTHONPATH), registered for this test only."""
    (tmp_path / "pool_tasks.py").write_text(textwrap.dedent(TASKS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    monkeypatch.setattr(pool_module, "_tasks", {})  # nor the grader's: these workers start in no time
    for name in ("echo", "fail", "hang", "die", "spin", "frozen"):
        register_task(name, f"pool_tasks:{name}")
    return tmp_path


def test_a_task_runs_in_a_worker_and_its_raise_is_a_failure_not_a_dead_worker(tasks: Path) -> None:
    with WorkerPool(workers=1) as pool:
        first = pool.call("echo", {"x": 1})
        assert first["x"] == 1 and first["pid"] != os.getpid()
        with pytest.raises(TaskRaised) as raised:
            pool.call("fail", {"why": "a bad input"})
        assert (raised.value.kind, raised.value.message) == ("ValueError", "a bad input")
        assert pool.call("echo", {})["pid"] == first["pid"]  # the same worker went on


async def test_a_call_past_its_limit_fails_and_a_fresh_worker_takes_the_next(tasks: Path) -> None:
    with WorkerPool(workers=1, timeout_s=30.0) as pool:
        before = (await pool.run("echo", {}))["pid"]
        with pytest.raises(TaskTimedOut):  # computing: its CPU limit
            await pool.run("spin", {"seconds": 60}, timeout_s=0.5)
        after = (await pool.run("echo", {}))["pid"]
        with pytest.raises(TaskTimedOut):  # waiting without computing: the wall-clock backstop (10x)
            await pool.run("hang", {"seconds": 60}, timeout_s=0.2)
        assert (await pool.run("echo", {}))["pid"] != after
    assert after != before


async def test_a_calls_limit_counts_its_workers_cpu_time_not_the_clock(tasks: Path) -> None:
    """A loaded machine gives a worker a small share of a core: here none for 2 s of a call's 1 s
    limit (the worker stopped), and the call still ends with its result, on the same worker."""
    with WorkerPool(workers=1, timeout_s=1.0) as pool:
        pid = (await pool.run("echo", {}))["pid"]
        os.kill(pid, signal.SIGSTOP)
        try:
            call = asyncio.ensure_future(pool.run("spin", {"seconds": 0.3}))
            await asyncio.sleep(2.0)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert await call == pid


def test_a_worker_that_dies_on_a_call_twice_is_a_failure_that_says_how(tasks: Path) -> None:
    with WorkerPool(workers=1) as pool:
        with pytest.raises(WorkerDied) as died:
            pool.call("die", {"code": 3})
        assert died.value.why == "exit code 3"
        assert pool.call("echo", {"x": 2})["x"] == 2


def test_map_gives_each_failure_to_on_failure_in_its_place(tasks: Path) -> None:
    with WorkerPool(workers=2) as pool:
        out = pool.map("fail", [{"why": "a"}, {"why": "b"}], lambda e: e.message)
    assert out == ["a", "b"]


async def test_a_call_that_hangs_in_a_batch_fails_alone_and_the_batch_goes_on_on_a_fresh_worker(
        tasks: Path) -> None:
    with WorkerPool(workers=1, timeout_s=30.0) as pool:
        # the first call keeps the worker busy while the others wait: they are sent to it as one batch
        out = await asyncio.gather(pool.run("hang", {"seconds": 0.5}), pool.run("echo", {"x": 1}),
                                   pool.run("hang", {"seconds": 60}, timeout_s=1.0), pool.run("echo", {"x": 2}),
                                   pool.run("fail", {"why": "bad"}), pool.run("echo", {"x": 3}),
                                   return_exceptions=True)
    assert out[0] is None and isinstance(out[2], TaskTimedOut) and isinstance(out[4], TaskRaised)
    assert [out[i]["x"] for i in (1, 3, 5)] == [1, 2, 3]
    assert out[1]["pid"] != out[3]["pid"] == out[5]["pid"]  # the calls after the hang, on its replacement


async def test_a_call_that_kills_its_worker_in_a_batch_fails_alone(tasks: Path) -> None:
    with WorkerPool(workers=1, timeout_s=30.0) as pool:
        out = await asyncio.gather(pool.run("hang", {"seconds": 0.5}), pool.run("echo", {"x": 1}),
                                   pool.run("die", {"code": 4}), pool.run("echo", {"x": 2}),
                                   return_exceptions=True)
    assert isinstance(out[2], WorkerDied) and out[2].why == "exit code 4"
    assert (out[1]["x"], out[3]["x"]) == (1, 2)


def test_calls_with_one_affinity_go_to_one_worker(tasks: Path) -> None:
    items = [{"key": key, "i": i} for i in range(4) for key in "abc"]
    with WorkerPool(workers=2) as pool:
        out = pool.map("echo", items, lambda e: e, affinity=lambda item: item["key"])
    pids = {key: {o["pid"] for o in out if o["key"] == key} for key in "abc"}
    assert all(len(p) == 1 for p in pids.values()) and pids["a"] != pids["b"]  # "a" and "b" by turns
    assert [o["i"] for o in out] == [item["i"] for item in items]


def test_a_workers_collector_stays_off_what_it_imported_and_the_pool_says_its_workers(tasks: Path) -> None:
    # a full collection that walks SymPy's objects again costs a verdict's CPU (docs/benchmarks.md)
    with WorkerPool(workers=2) as pool:
        pid, frozen = pool.call("frozen", {})
        assert frozen > 1000 and pid in pool.pids() and len(set(pool.pids())) == 2


def test_a_failure_crosses_processes_as_itself() -> None:
    """A cluster's actor sends its pool's failures to the driver pickled (a timeout used not to unpickle)."""
    for failure in (TaskTimedOut("verify", 5.0), WorkerDied("verify", "exit code 3"),
                    TaskRaised("verify", "ValueError", "bad"), GradingFailed("x did not finish")):
        again = pickle.loads(pickle.dumps(failure))
        assert type(again) is type(failure) and str(again) == str(failure) and vars(again) == vars(failure)


def test_a_task_registered_after_the_pool_started_is_imported_before_its_limit_starts(
        tasks: Path) -> None:
    (tasks / "slow_tasks.py").write_text("import time\ntime.sleep(3.0)  # a heavy import, as SymPy's\n"
                                         "def ok():\n    return 'ok'\n")
    with WorkerPool(workers=1, timeout_s=1.0) as pool:
        pool.call("echo", {})  # started without it
        register_task("slow", "slow_tasks:ok")
        assert pool.call("slow", {}) == "ok"


def test_a_task_that_cannot_be_imported_makes_the_workers_unavailable(tasks: Path) -> None:
    register_task("missing", "no_such_module_here:run")
    with WorkerPool(workers=1) as pool:
        assert pool.call("echo", {"x": 3})["x"] == 3  # the other tasks still run
        with pytest.raises(WorkersUnavailable, match="'missing' .*ModuleNotFoundError"):
            pool.call("missing", {})


def test_a_name_is_one_task(tasks: Path) -> None:
    register_task("echo", "pool_tasks:echo")  # the same again: nothing changes
    with pytest.raises(ValueError, match="registered already"):
        register_task("echo", "pool_tasks:fail")
    with WorkerPool(workers=1) as pool, pytest.raises(KeyError, match="no worker task 'nope'"):
        pool.call("nope", {})


def test_a_domain_is_handed_the_runs_pool_or_starts_its_own_for_the_block() -> None:
    with WorkerPool(workers=1) as handed:
        math = MathDomain(handed)
        with math:
            assert math.worker_pool() is handed
        assert math.pool is handed  # not the domain's to close
    math = MathDomain()
    with pytest.raises(RuntimeError, match="runs in a worker pool"):
        math.worker_pool()
    with math:
        own = math.worker_pool()
        assert own.call("verify", {"response": "\\boxed{2}", "gold": "2"}).accepted
    assert math.pool is None
    with CodeDomain() as code:  # the sandbox runs its own processes
        assert code.pool is None
