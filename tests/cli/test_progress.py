"""Where stderr is no terminal (a log, a pipe), a run says its progress in a plain line every few
seconds, not a bar drawn once at its end."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app, display
from oracleladder.testing import LoopbackServer


def test_plain_progress_lines_when_stderr_is_no_terminal(sample_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(display, "PLAIN_EVERY_S", 0.1)
    with LoopbackServer(latency=0.2) as server:
        result = CliRunner().invoke(app, ["probe", "--student", "openai/s", "--base-url", server.openai_base_url,
                                          "--store", str(sample_store), "--limit", "3", "--k", "2", "--no-stage0",
                                          "--conditions", "C1", "--concurrency", "1"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("probe openai/s: ")]
    done = [int(re.match(r"probe openai/s: (\d+) of 4 done, \d+ s, \$0\.0000", line).group(1)) for line in lines]
    assert len(done) >= 3 and done == sorted(done) and done[-1] == 4  # said as it went, and at its end
    assert "━" not in result.stderr  # no bar
