"""A Python function as a student or a teacher through the Python API: asked through the toolkit's
Client like any endpoint, so cached (a rerun calls it 0 times), keyed by its name and version,
counted, and its exceptions failed calls, never answers."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oracleladder import Endpoint, Experiment, SyncExperiment
from oracleladder.experiment import EndpointError, ExperimentError, ProbeResult
from tests.experiment.readme import answer
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve

pytestmark = pytest.mark.integration  # each experiment starts its verifier pool


class Student:
    """A deterministic student (the README example's answers), counting its calls and their params."""

    def __init__(self) -> None:
        self.calls = 0
        self.params: list[dict] = []

    async def __call__(self, messages: list[dict], params: dict) -> tuple[str, dict[str, int]]:
        self.calls += 1
        self.params.append(params)
        await asyncio.sleep(0)
        return answer(messages, params), {"tokens_in": 10, "tokens_out": 3}


async def _probe(ex: Experiment, student, **options) -> ProbeResult:
    probed = await ex.probe(student, k=2, **options)
    assert isinstance(probed, ProbeResult)
    return probed


async def test_an_async_function_student_is_cached_keyed_by_its_version_and_counted(
        tmp_path: Path, families_file: Path) -> None:
    student = Student()
    async with Experiment(tmp_path / "f.sqlite", workers=1) as ex:
        await ex.import_families(families_file)
        first = await _probe(ex, student, name="mine", version="1")
        asked = student.calls
        again = await _probe(ex, student, name="mine", version="1")
        summary = (await ex.report(["python/mine"])).summary("python/mine")
        rollouts = await ex.store.rollouts(student="python/mine")
        newer = await _probe(ex, student, name="mine", version="2")

    assert asked > 0 and first.usage.requests == first.usage.successes == asked and not first.failed_jobs
    assert (first.usage.tokens_in, first.usage.tokens_out) == (10 * asked, 3 * asked)  # its own count
    assert first.usage.cost_usd == 0.0  # a function in this process costs nothing, and says so
    assert {(p["temperature"], p["max_tokens"]) for p in student.params} == {(1.0, 4096)}
    # the rerun: every job answered from the store, the function not called
    assert again.usage.requests == 0 and again.usage.cache_hits == asked
    assert summary["n"] == 3 and summary["k"] == 2 and len(rollouts) == asked
    # a new version is a new model behind the same name: asked again
    assert newer.usage.requests == asked and student.calls == 2 * asked


def test_a_sync_function_runs_in_a_thread_of_its_own_with_the_same_answers(tmp_path: Path, families_file: Path) -> None:
    threads: set[str] = set()

    def student(messages: list[dict], params: dict) -> str:
        try:
            asyncio.get_running_loop()
            threads.add("the event loop's")
        except RuntimeError:
            threads.add(threading.current_thread().name)
        return answer(messages, params)

    with SyncExperiment(tmp_path / "s.sqlite", workers=1) as ex:
        ex.import_families(families_file)
        probed = ex.probe(student, name="sync", k=2)
        assert isinstance(probed, ProbeResult) and probed.usage.requests > 0 and not probed.failed_jobs
        # a reply without a count is counted at its bound, as any server's without usage is
        assert probed.usage.unmetered == probed.usage.requests and probed.usage.tokens_in > 0
        summary = ex.report(["python/sync"]).summary("python/sync")
    assert threads and "the event loop's" not in threads
    with SyncExperiment(tmp_path / "a.sqlite", workers=1) as ex:
        ex.import_families(families_file)
        ex.probe(Student(), name="async", k=2)
        assert ex.report(["python/async"]).summary("python/async") == summary


async def test_a_raising_function_fails_its_calls_and_a_rerun_asks_them_again(
        tmp_path: Path, families_file: Path) -> None:
    broken = True
    calls: list[str] = []

    async def student(messages: list[dict], params: dict) -> str:
        calls.append(messages[-1]["content"])
        if broken and len(messages[-1]["content"]) % 3 == 0:
            raise RuntimeError("CUDA out of memory")
        return answer(messages, params)

    async with Experiment(tmp_path / "r.sqlite", workers=1) as ex:
        await ex.import_families(families_file)
        first = await _probe(ex, student, name="flaky")
        stored = await ex.store.rollouts(student="python/flaky")
        errors = await ex.store.calls(errors_only=True)
        failed_calls = len(calls)
        broken = False
        second = await _probe(ex, student, name="flaky")
        after = await ex.store.rollouts(student="python/flaky")

    assert first.failed_jobs and first.usage.failures == len(first.failed_jobs) == len(errors)
    assert all("python/flaky raised RuntimeError: CUDA out of memory" in f.reason for f in first.failed_jobs)
    assert all(e.error.startswith("FunctionFailed") for e in errors)
    # never an answer: no rollout for a failed job, and no retry of a permanent failure
    assert len(stored) == first.usage.successes and failed_calls == first.usage.successes + len(errors)
    assert second.usage.requests == len(errors) and not second.failed_jobs
    assert len(after) == len(stored) + len(errors)


async def test_a_function_teacher_compiles_with_the_schema_in_its_prompt(tmp_path: Path) -> None:
    plans: list[list[dict]] = []
    solves: list[list[dict]] = []

    def teacher(messages: list[dict], params: dict) -> str:
        if asks_plan(messages):
            plans.append(messages)
            return json.dumps(GOOD)
        solves.append(messages)
        return solve(messages)

    pool = tmp_path / "pool.jsonl"
    pool.write_text(PROBLEM.model_dump_json() + "\n")
    async with Experiment(tmp_path / "t.sqlite", workers=1) as ex:
        compiled = await ex.compile(pool, teacher, name="mentor", version="2026-01")
        again = await ex.compile(pool, teacher, name="mentor", version="2026-01")
        families = await ex.roadmap_set("python/mentor")
    assert (compiled.compiled, again.compiled, len(plans)) == (1, 1, 1) and solves  # its milestones solved alone
    assert compiled.usage.requests == 1 + len(solves) and again.usage.requests == 0
    assert '"title": "TeacherPlan"' in plans[0][0]["content"]  # the schema in the prompt: no response_format
    assert [f.pid for f in families] == [PROBLEM.pid]


async def test_a_function_without_a_name_or_a_python_model_without_a_function_is_refused(tmp_path: Path) -> None:
    async with Experiment(tmp_path / "n.sqlite") as ex:
        with pytest.raises(ExperimentError, match=r"needs a name \(name=...\)"):
            await ex.probe(Student())
        with pytest.raises(ExperimentError, match="name= and version= name a Python function"):
            await ex.probe("openai/x", name="x")
    with pytest.raises(EndpointError, match="a python/NAME model is a Python function"):
        Endpoint("python/mine")  # as the CLI's --student python/mine makes it
    with pytest.raises(EndpointError, match="has no base URL and no batch API"):
        Endpoint("python/mine", function=Student(), batch=True)


async def test_a_hung_async_function_is_cancelled_at_the_endpoints_timeout_and_its_calls_fail(
        tmp_path: Path, families_file: Path) -> None:
    cancelled: list[str] = []

    async def student(messages: list[dict], params: dict) -> str:
        if len(messages[-1]["content"]) % 2:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(messages[-1]["content"])
                raise
        return answer(messages, params)

    async with Experiment(tmp_path / "h.sqlite", workers=1) as ex:
        await ex.import_families(families_file)
        probed = await asyncio.wait_for(_probe(ex, Endpoint("python/hung", function=student, timeout=0.5)), 120)
        errors = await ex.store.calls(errors_only=True)
        run = await ex.store.get_run(probed.run_id)

    assert probed.failed_jobs and len(cancelled) == len(errors) == probed.usage.failures
    assert all(f.reason.startswith("FunctionTimeout: python/hung ran past its timeout of 0.5 s") for f in probed.failed_jobs)
    assert all(e.error.startswith("FunctionTimeout") for e in errors)  # never an answer, and not retried
    assert probed.usage.successes > 0 and run is not None and run.status == "done_with_failures"


HUNG_SYNC = """
import sys, threading
from oracleladder import Endpoint, SyncExperiment

def student(messages, params):
    threading.Event().wait()  # hangs for ever, as a deadlocked pipeline does

with SyncExperiment(sys.argv[1], workers=1) as ex:
    ex.import_families(sys.argv[2])
    probed = ex.probe(Endpoint("python/stuck", function=student, timeout=1), k=1, limit=1)
    print(len(probed.failed_jobs), probed.failed_jobs[0].reason, flush=True)
"""


def test_a_hung_plain_function_fails_its_calls_and_the_process_still_exits(tmp_path: Path, families_file: Path) -> None:
    script = tmp_path / "hung.py"
    script.write_text(HUNG_SYNC)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "s.sqlite"), str(families_file)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    failed, reason = done.stdout.split(" ", 1)
    assert int(failed) > 0
    assert reason.strip() == "FunctionTimeout: python/stuck ran past its timeout of 1 s (its thread is left running, abandoned)"


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"])
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_function_raising_systemexit_or_keyboardinterrupt_fails_that_call_and_the_run_ends(
        tmp_path: Path, families_file: Path, raised: BaseException, kind: str) -> None:
    def reply(messages: list[dict], params: dict) -> str:
        if len(messages[-1]["content"]) % 3 == 0:
            raise raised
        return answer(messages, params)

    async def async_reply(messages: list[dict], params: dict) -> str:
        return reply(messages, params)

    async with Experiment(tmp_path / "x.sqlite", workers=1) as ex:
        await ex.import_families(families_file)
        probed = await _probe(ex, async_reply if kind == "async" else reply, name="quits")
        run = await ex.store.get_run(probed.run_id)
        errors = await ex.store.calls(errors_only=True)
    assert probed.failed_jobs and probed.usage.successes > 0 and len(errors) == probed.usage.failures
    assert all(f.reason.startswith(f"FunctionFailed: python/quits raised {type(raised).__name__}")
               for f in probed.failed_jobs)
    assert run is not None and run.status == "done_with_failures"
