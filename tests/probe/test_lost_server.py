"""A server lost mid-probe is an endpoint failure, not a crash: the run keeps what finished, names
the jobs left, says its status and how to resume, and exits 3; the same command, once the server is
back, completes them."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer
from tests.helpers import rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_lost_mid_probe_keeps_what_finished_and_a_rerun_completes_it(sample_store: Path,
                                                                               quick_retries: None) -> None:
    port = _free_port()
    probe = ["probe", "--student", "openai/s", "--base-url", f"http://127.0.0.1:{port}/v1", "--store",
             str(sample_store), "--limit", "3", "--k", "2", "--no-stage0", "--conditions", "C1,C2",
             "--concurrency", "1"]
    jobs = 2 * 2 * 2  # families x conditions x k: the first family's reference answer is unusable
    server = LoopbackServer(port=port, latency=0.05).__enter__()

    def kill_after_three() -> None:
        while server.total < 3:
            time.sleep(0.005)
        server.stop_thread()

    killer = threading.Thread(target=kill_after_three)
    killer.start()
    result = CliRunner().invoke(app, probe)
    killer.join()
    answered = sum(server.ok_by_prompt.values())
    assert result.exit_code == 3, result.output
    assert 2 <= answered < jobs
    stored = rows(sample_store, "SELECT COUNT(*) FROM rollouts")[0][0]
    assert stored == answered  # every answer that came back is kept
    left = jobs - answered
    assert f"{left} jobs failed (no answer; rerun the same command to ask them again)" in result.stderr
    assert result.stderr.count("    pid ") == left  # each named
    # the call in flight failed after its retries; the jobs waiting for its slot were never sent
    assert "EndpointLost: not sent, the endpoint was lost: cannot connect to" in result.stderr
    assert "the endpoint stopped answering mid-run (cannot connect to" in result.stderr
    assert "done_with_failures; rerun the same command to resume" in result.stderr
    assert "Traceback" not in result.output

    with LoopbackServer(port=port) as back:
        rerun = CliRunner().invoke(app, probe)
        assert rerun.exit_code == 0, rerun.output
        assert sum(back.ok_by_prompt.values()) == back.total == left  # only what was missing is asked
    assert rows(sample_store, "SELECT COUNT(*) FROM rollouts")[0][0] == jobs
