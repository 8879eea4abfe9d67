"""Ctrl-C on a running `ladder probe`: a clean stop, results kept, and a resume that re-asks nothing stored."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from oracleladder.testing import LoopbackServer
from tests.helpers.terminal import LADDER, ladder


def _ladder(*args: str, **kw) -> subprocess.Popen:
    return ladder(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_ctrl_c_keeps_results_and_resume_asks_nothing_twice(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "int.sqlite"
    subprocess.run([*LADDER, "import", str(release_data / "families_sample.jsonl"), "--store", str(store)],
                   check=True, capture_output=True, timeout=120)
    args = ["probe", "--student", "openai/slow", "--k", "2", "--limit", "10", "--concurrency", "4",
            "--store", str(store)]
    with LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=0.2) as server:
        proc = _ladder(*args, "--base-url", server.openai_base_url)
        deadline = time.monotonic() + 90
        while server.total < 12 and time.monotonic() < deadline:  # let some calls finish first
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err.decode()[-2000:]
        assert "interrupted: everything finished so far is kept" in err.decode()

        con = sqlite3.connect(store)
        stored = {key for (key,) in con.execute("SELECT key FROM calls WHERE error IS NULL")}
        kept = con.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
        status = con.execute("SELECT status FROM runs WHERE kind = 'probe'").fetchone()[0]
        con.close()
        assert stored and kept > 0 and status == "interrupted"
        asked_before = server.total

        resume = _ladder(*args, "--base-url", server.openai_base_url, "--json")
        out, err = resume.communicate(timeout=180)
        assert resume.returncode == 0, err.decode()[-2000:]
        summary = json.loads(out.decode().strip().splitlines()[-1])
        # the resume asks only what the first run did not store
        assert summary["requests"] == summary["calls"] - summary["cache_hits"]
        assert summary["cache_hits"] >= len(stored)
        assert server.total == asked_before + summary["requests"]


def _probing(tmp_path: Path, release_data: Path, server: LoopbackServer, store: Path) -> subprocess.Popen:
    """A probe with calls under way, in a process group of its own as a terminal's foreground job."""
    subprocess.run([*LADDER, "import", str(release_data / "families_sample.jsonl"), "--store", str(store)],
                   check=True, capture_output=True, timeout=120)
    proc = _ladder("probe", "--student", "openai/slow", "--k", "2", "--limit", "10", "--concurrency", "4",
                   "--store", str(store), "--base-url", server.openai_base_url, process_group=0)
    deadline, before = time.monotonic() + 90, server.total
    while server.total < before + 8 and time.monotonic() < deadline:  # calls under way
        time.sleep(0.1)
    return proc


def test_second_ctrl_c_during_cleanup_still_exits_130(tmp_path: Path, release_data: Path) -> None:
    with LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=0.2) as server:
        # Ctrl-C in a terminal signals the whole group (the verifier workers too); the second one
        # lands at different points of the cleanup (before the fix, about half of these died by SIGINT)
        for i, gap in enumerate((0.05, 0.2, 0.5, 0.5, 1.0, 1.0)):
            proc = _probing(tmp_path, release_data, server, tmp_path / f"twice{i}.sqlite")
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(gap)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, (gap, err.decode()[-2000:])


def test_a_run_killed_outright_shows_as_interrupted(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "kill.sqlite"

    def statuses() -> list[str]:
        listed = subprocess.run([*LADDER, "runs", "--store", str(store)], capture_output=True, text=True,
                                timeout=120)
        assert listed.returncode == 0, listed.stderr
        return [line.split("\t")[1] for line in listed.stdout.splitlines()]

    with LoopbackServer(script=lambda m, b: r"\boxed{0}", latency=0.2) as server:
        proc = _probing(tmp_path, release_data, server, store)
        proc.kill()
        proc.wait(timeout=30)
        con = sqlite3.connect(store)
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "running"  # as the kill left it
        con.close()
        assert statuses() == ["interrupted"]
        # a run whose process still runs stays 'running' when another process opens the store
        proc = _probing(tmp_path, release_data, server, store)
        try:
            assert statuses() == ["interrupted", "running"]
        finally:
            proc.kill()
            proc.wait(timeout=30)
