"""The Python API: the README's example runs as written (against the loopback server), and the
synchronous API gives the async API's results from a running event loop, a thread, and a plain
script without a __main__ guard, `python -c` and `python -`."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oracleladder import Endpoint, Experiment, SyncExperiment
from oracleladder.experiment import ExperimentError, ProbeResult
from oracleladder.testing import LoopbackServer
from tests.experiment.readme import answer, readme_blocks
from tests.helpers import REPO

STUDENT = "openai/scripted"


def _summary(report) -> str:
    return json.dumps(report.summary(STUDENT), sort_keys=True)


async def _async_run(store: Path, families: Path, url: str) -> tuple[ProbeResult, str]:
    async with Experiment(store) as ex:
        assert (await ex.import_families(families)).families == 3
        probed = await ex.probe(Endpoint(STUDENT, base_urls=[url]), k=2)
        report = await ex.report([STUDENT])
    return probed, _summary(report)


def _sync_run(store: Path, families: Path, url: str) -> tuple[ProbeResult, str]:
    with SyncExperiment(store, workers=1) as ex:
        assert ex.import_families(families).families == 3
        probed = ex.probe(Endpoint(STUDENT, base_urls=[url]), k=2)
        report = ex.report([STUDENT])
    return probed, _summary(report)


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(script=answer, max_lifetime=1800) as srv:  # the module's tests, on a busy machine
        yield srv


@pytest.fixture(scope="module")
def expected(server: LoopbackServer, families_file: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    probed, summary = asyncio.run(_async_run(tmp_path_factory.mktemp("a") / "a.sqlite", families_file,
                                             server.openai_base_url))
    assert probed.usage.requests > 0 and not probed.failed_jobs and not probed.ungraded
    assert json.loads(summary)["n"] == 3 and json.loads(summary)["k"] == 2
    return summary


def test_sync_api_inside_a_running_event_loop(tmp_path: Path, server, families_file: Path, expected: str) -> None:
    async def cell() -> tuple[ProbeResult, str]:  # as a notebook cell: a loop runs in this thread
        asyncio.get_running_loop()
        return _sync_run(tmp_path / "s.sqlite", families_file, server.openai_base_url)

    probed, summary = asyncio.run(cell())
    assert summary == expected and probed.usage.requests > 0
    # a second experiment on the same store asks nothing again: every job has its rollout
    asked = server.total
    again, summary = _sync_run(tmp_path / "s.sqlite", families_file, server.openai_base_url)
    assert again.usage.requests == 0 and server.total == asked and summary == expected


def test_sync_api_from_a_thread(tmp_path: Path, server, families_file: Path, expected: str) -> None:
    got: list = []
    t = threading.Thread(target=lambda: got.append(_sync_run(tmp_path / "t.sqlite", families_file,
                                                              server.openai_base_url)))
    t.start()
    t.join(timeout=240)
    assert got and got[0][1] == expected


SCRIPT = """\
import json, sys
from oracleladder import Endpoint, SyncExperiment
store, families, url = sys.argv[1:4]
with SyncExperiment(store) as ex:
    ex.import_families(families)
    ex.probe(Endpoint("openai/scripted", base_urls=[url]), k=2)
    report = ex.report(["openai/scripted"])
print(json.dumps(report.summary("openai/scripted"), sort_keys=True))
"""


@pytest.mark.parametrize("how", ["script", "python -c", "stdin"])
def test_sync_api_from_a_plain_script(how: str, tmp_path: Path, server, families_file: Path, expected: str) -> None:
    args = [str(tmp_path / "p.sqlite"), str(families_file), server.openai_base_url]
    (tmp_path / "s.py").write_text(SCRIPT)
    argv = {"script": [str(tmp_path / "s.py")], "python -c": ["-c", SCRIPT], "stdin": ["-"]}[how]
    p = subprocess.run([sys.executable, *argv, *args], input=SCRIPT if how == "stdin" else None, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1] == expected
    assert "Traceback" not in p.stderr, p.stderr[-3000:]


async def test_an_unknown_roadmap_set_is_one_clear_error(tmp_path: Path) -> None:
    async with Experiment(tmp_path / "e.sqlite") as ex:
        with pytest.raises(ExperimentError, match="holds no families of roadmap set 'nobody'"):
            await ex.probe("openai/x", source="nobody")
        with pytest.raises(ExperimentError, match="unknown granularity 'tiny'"):
            await ex.compile(tmp_path / "pool.jsonl", "openai/x", granularity="tiny")


async def test_readme_example_runs(tmp_path: Path, families_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = readme_blocks()
    (tmp_path / "families.jsonl").write_text(families_file.read_text())
    monkeypatch.chdir(tmp_path)
    async with LoopbackServer(script=answer) as srv:
        # the example's server is the loopback one; nothing else in the text is changed
        code = first.replace("http://localhost:8000/v1", srv.openai_base_url)
        namespace: dict = {}
        await eval(compile(code, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
        summary, report = namespace["summary"], namespace["report"]
        assert summary.usage.requests == srv.total > 0 and not summary.failed_jobs
        assert report.summary("openai/qwen3-8b")["n"] == 3 and report.summary("openai/qwen3-8b")["k"] == 8
        assert (tmp_path / "report" / "report.md").is_file() and (tmp_path / "report" / "html" / "index.html").is_file()
        calls = srv.total
        exec(second, namespace)  # the synchronous example, in this running loop's thread
    assert srv.total == calls
    assert namespace["report"].summary("openai/qwen3-8b") == report.summary("openai/qwen3-8b")
