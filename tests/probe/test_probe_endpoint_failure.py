"""A probe whose endpoint fails (a refused key here; no connection alike) stops with its one line and
nothing after it: the other calls in flight are cancelled before the client is closed, so none opens
its session again ("Unclosed client session" was printed after the error)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from oracleladder.testing import Faults, LoopbackServer


def test_a_probe_stopped_by_its_endpoint_says_one_line(sample_store: Path) -> None:
    # the first call is refused (401: an endpoint failure), every other one hangs a second
    with LoopbackServer(faults=Faults(fail_first=1, fail_first_kind="401", hang=1.0, hang_s=1.0)) as server:
        result = subprocess.run([sys.executable, "-m", "oracleladder.cli", "probe", "--student", "openai/x",
                                 "--model-name", "x", "--base-url", server.openai_base_url, "--store",
                                 str(sample_store), "--limit", "3", "--k", "2"],
                                capture_output=True, text=True, timeout=120)
        time.sleep(1.5)  # the server answers the hung calls before it stops
    assert result.returncode == 1
    # the notes said at the start (the calls in flight, the families skipped), then the one error line, last
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("probe ")]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == lines[-1] and "wants a key (HTTP 401)" in errors[0], result.stderr
