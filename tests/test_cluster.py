"""`--ray`: a probe on a local Ray cluster of 2 workers stores what the plain run stores, each prompt
asked once; a worker killed mid-run loses only its calls in flight, and the run finishes whole; without
Ray, --ray says how to install it in one line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from oracleladder import Endpoint, Experiment
from oracleladder.cluster import Cluster
from oracleladder.experiment import ProbeResult
from oracleladder.testing import LoopbackServer
from tests.experiment.readme import answer
from tests.helpers import REPO, needs, rows

pytestmark = needs("ray", "Ray not installed: pip install 'oracleladder[ray]'")

STUDENT = "openai/scripted"
CONCURRENCY = 4  # each worker's calls in flight
ROLLOUTS = "SELECT pid, target, k, hex(call_key), label, reason, extracted, status FROM rollouts_named ORDER BY 1, 2, 3"


async def probed(store: Path, families: Path, url: str, cluster: Cluster | None = None,
                 during=lambda ex: None) -> ProbeResult:
    async with Experiment(store, cluster=cluster) as ex:
        await ex.import_families(families)
        during(ex)
        result = await ex.probe(Endpoint(STUDENT, base_urls=[url], concurrency=CONCURRENCY), k=1, limit=10)
        assert isinstance(result, ProbeResult)
        return result


def test_a_probe_on_two_workers_stores_what_the_plain_run_stores(release_data: Path, tmp_path: Path) -> None:
    families = release_data / "families_sample.jsonl"
    with LoopbackServer(script=answer, max_lifetime=900) as server:
        plain = asyncio.run(probed(tmp_path / "plain.sqlite", families, server.openai_base_url))
        asked = server.stats()["total"]
        server.reset()
        spread = asyncio.run(probed(tmp_path / "ray.sqlite", families, server.openai_base_url,
                                    Cluster("local", workers=2, num_cpus=2)))
        stats = server.stats()
    assert plain.families == spread.families == 10 and not spread.failed_jobs and not spread.ungraded
    assert rows(tmp_path / "ray.sqlite", ROLLOUTS) == rows(tmp_path / "plain.sqlite", ROLLOUTS)
    jobs = len(rows(tmp_path / "plain.sqlite", ROLLOUTS))
    assert stats["total"] == stats["distinct_bodies"] == asked == jobs and stats["max_per_body"] == 1
    assert spread.usage.requests == jobs  # the driver's count covers the cluster


def test_a_worker_killed_mid_run_loses_only_its_calls_in_flight(release_data: Path, tmp_path: Path) -> None:
    victim: list[int] = []
    seen, lock = [0], threading.Lock()

    def answer_and_kill(messages: list[dict], body: dict) -> str:
        with lock:
            seen[0] += 1
            if seen[0] == 25:  # mid-run: calls of both workers in flight
                os.kill(victim[0], signal.SIGKILL)
        return answer(messages, body)

    def aim(ex: Experiment) -> None:
        assert ex.cluster is not None
        victim.append(ex.cluster.pids()[0])

    with LoopbackServer(script=answer_and_kill, latency=0.05, max_lifetime=900) as server:
        store = tmp_path / "ray.sqlite"
        result = asyncio.run(probed(store, release_data / "families_sample.jsonl", server.openai_base_url,
                                    Cluster("local", workers=2, num_cpus=2), during=aim))
        stats = server.stats()
    assert seen[0] > 25 and victim
    jobs = len(rows(store, ROLLOUTS))
    assert not result.failed_jobs and not result.ungraded and jobs == stats["distinct_bodies"]
    assert rows(store, "SELECT COUNT(*) FROM calls WHERE response IS NULL") == [(0,)]
    # the answers lost with the worker were asked again: at most its calls in flight
    assert 0 <= stats["total"] - jobs <= CONCURRENCY


def test_without_ray_the_option_says_how_to_install_it(tmp_path: Path) -> None:
    # a Ray that cannot be imported, as where it is not installed
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    store = tmp_path / "s.sqlite"
    done = subprocess.run([sys.executable, "-m", "oracleladder.cli", "probe", "--student", STUDENT, "--base-url",
                           "http://127.0.0.1:9/v1", "--ray", "local", "--store", str(store)],
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: --ray needs Ray, an optional extra: pip install 'oracleladder[ray]'"]
    assert not store.exists()
