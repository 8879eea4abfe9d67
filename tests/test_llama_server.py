"""Against a real third-party server: llama-cpp-python's ``llama_cpp.server`` (see the
``llama_server`` fixture). Requests are counted on the server's side, from its access log."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app


def test_probe_then_cached_rerun_sends_nothing(tmp_path: Path, shared_data: Path, llama_server) -> None:
    runner = CliRunner()
    store = str(tmp_path / "s.sqlite")
    result = runner.invoke(app, ["import", str(shared_data / "families_sample.jsonl"), "--store", store])
    assert result.exit_code == 0, result.output
    probe = ["probe", "--student", "openai/smollm2", "--base-url", llama_server.base_url, "--limit", "3",
             "--k", "2", "--max-tokens", "16", "--concurrency", "2", "--store", store, "--json"]
    before = len(llama_server.chat_statuses())
    result = runner.invoke(app, probe)
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.strip().splitlines()[-1])
    served = llama_server.chat_statuses()[before:]
    assert first["families"] == 3 and first["failures"] == 0
    assert len(served) == first["requests"] > 0 and set(served) == {200}

    result = runner.invoke(app, probe)
    assert result.exit_code == 0, result.output
    rerun = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(llama_server.chat_statuses()) == before + len(served)  # the server saw nothing new
    assert rerun["requests"] == 0 and rerun["cache_hits"] == first["requests"]
