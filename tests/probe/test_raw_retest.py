"""The raw-output retest's probe (paper Table 43): `--pids` probes only the families named (a list or
a file), `--no-system-prompt` sends no system message, so its calls are other calls, and the run
records the setting, which a report never pools with the default."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

STUDENT = "openai/student"
A, B = "e8934cce-72fe-48b4-8447-0089a1562ffb", "f8a3e468-191f-474b-9353-04d5d1e32347"


def _probe(store: Path, server: LoopbackServer, *more: str):
    return CliRunner().invoke(app, ["probe", "--student", STUDENT, "--store", str(store), "--base-url",
                                    server.openai_base_url, "--k", "2", "--conditions", "C3", "--no-stage0",
                                    "--temperature", "0.7", "--json", *more])


def test_no_system_prompt_for_only_the_pids_given(sample_store: Path, tmp_path: Path) -> None:
    asked: list[list[dict]] = []

    def student(messages: list[dict], body: dict) -> str:
        asked.append(messages)
        return "\\boxed{0}"

    with LoopbackServer(script=student) as server:
        raw = _probe(sample_store, server, "--no-system-prompt", "--pids", f"{A},{B}")
        assert raw.exit_code == 0, raw.output
        assert len(asked) == 2 * 2  # two families, C3, K = 2
        assert all(m["role"] != "system" for messages in asked for m in messages)
        raw_prompts = {messages[-1]["content"] for messages in asked}

        # the same families with the system prompt: other requests, asked anew (not the cache's answers)
        pids = tmp_path / "pids.txt"
        pids.write_text(f"# the retest's families\n{B}\n{A}\n")
        asked.clear()
        default = _probe(sample_store, server, "--pids", str(pids))
        assert default.exit_code == 0, default.output
        assert len(asked) == 4
        assert all(messages[0]["role"] == "system" for messages in asked)
        assert {messages[-1]["content"] for messages in asked} == raw_prompts

    async def stored() -> tuple[list, list]:
        async with Store.open(sample_store) as s:
            return await s.rollouts(student=STUDENT), await s.runs()

    rollouts, runs = asyncio.run(stored())
    assert {r.pid for r in rollouts} == {A, B} and len(rollouts) == 8
    configs = {r.id: r.config for r in runs if r.kind == "probe"}
    raw_run = json.loads(raw.stdout)["run_id"]
    assert configs[raw_run]["system_prompt"] is False and configs[raw_run]["pids"] == [A, B]
    assert configs[json.loads(default.stdout)["run_id"]]["system_prompt"] is True

    # two settings a report never pools: it names the one that differs
    report = CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(sample_store)])
    assert report.exit_code == 2 and "system_prompt=False" in report.output and "system_prompt=True" in report.output
    picked = CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(sample_store),
                                      "--run", raw_run, "--out", str(tmp_path / "r")])
    assert picked.exit_code == 0, picked.output


def test_a_pid_the_set_does_not_hold_is_refused(sample_store: Path) -> None:
    with LoopbackServer(script=lambda m, b: "\\boxed{0}") as server:
        result = _probe(sample_store, server, "--pids", f"{A},nope")
        assert server.total == 0
    assert result.exit_code == 2 and "roadmap set 'release' holds no family nope" in result.output
