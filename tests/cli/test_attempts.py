"""`ladder attempts`: a teacher's compile attempts per problem, each plan with its errors and reasons,
read from the store without SQL."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve


def test_attempts_show_each_plan_and_why_it_failed(tmp_path: Path) -> None:
    plans = iter(["I would rather explain it in words.", json.dumps(GOOD)])

    def teacher(messages: list[dict], body: dict) -> str:
        return next(plans) if asks_plan(messages) else solve(messages)

    pool, store = tmp_path / "pool.jsonl", tmp_path / "s.sqlite"
    pool.write_text(PROBLEM.model_dump_json() + "\n")
    with LoopbackServer(script=teacher) as server:
        compiled = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                            server.openai_base_url, "--structured", "md_json", "--store", str(store)])
    assert compiled.exit_code == 0, compiled.output
    result = CliRunner().invoke(app, ["attempts", "--teacher", "openai/t", "--store", str(store)])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "roots (default) attempt 1: failed"
    assert lines[1].startswith("  [teacher] plan: the reply is not a valid TeacherPlan")
    assert lines[2] == "roots (default) attempt 2: passed"
    assert lines[3] == f"  1. {GOOD['milestones'][0]['type']}: {GOOD['milestones'][0]['description']} -> " \
                       f"{GOOD['milestones'][0]['canonical_answer']}"
    as_json = CliRunner().invoke(app, ["attempts", "--teacher", "openai/t", "--pid", "roots", "--store", str(store),
                                       "--json"])
    assert [json.loads(line)["passed"] for line in as_json.stdout.splitlines()] == [False, True]
    unknown = CliRunner().invoke(app, ["attempts", "--teacher", "openai/tt", "--store", str(store)])
    assert unknown.exit_code == 2
    assert unknown.stderr.strip().splitlines() == [
        f"error: {store} holds no compile attempts by teacher 'openai/tt' (did you mean 'openai/t'?)"]
