"""`ladder compile --integrate-only` against a loopback teacher: the INTEGRATE step of released families
(which have none) written, its gold checked against the reference answer by the verifier, a wrong gold
re-asked with the check's reason, every attempt stored; a second run asks nothing."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math.plan import problem_of
from oracleladder.schemas import Family, MilestoneType
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from oracleladder.validators.family import CHECK_INTEGRATE

PIDS = ("f8a3e468", "de4b7c19", "8aa407cb")
WRONG_FIRST = "de4b7c19"  # its first step's gold is wrong: 27/64 for 37/64


def _step(answer: str) -> str:
    return json.dumps({"answer_schema": "NUMBER", "canonical_answer": answer,
                       "description": "Combine the results stated above into the final answer. Output the number."})


async def _read(store: Path) -> tuple[list[Family], list]:
    async with Store.open(store) as s:
        return await s.families(), await s.integrate_attempts()


def test_integrate_only_fills_and_validates_the_step_and_reasks_a_wrong_gold(tmp_path, release_data):
    families = tmp_path / "families.jsonl"
    lines = [line for line in (release_data / "families_sample.jsonl").read_text().splitlines()
             if json.loads(line)["pid"][:8] in PIDS]
    families.write_text("\n".join(lines) + "\n")
    store, runner = tmp_path / "s.sqlite", CliRunner()
    assert runner.invoke(app, ["import", str(families), "--store", str(store)]).exit_code == 0
    asked: list[list[dict]] = []

    def teacher(messages: list[dict], body: dict) -> str:
        assert messages[0]["content"].startswith("You are a Mathematics Mentor. Your ONLY job is to output one milestone")
        asked.append(messages)
        answer = re.search(r"Reference answer:\n(.*?)\n\nRoadmap:", messages[1]["content"], re.S).group(1)
        first = len(messages) == 2
        return _step("\\frac{27}{64}" if first and answer == "\\frac{37}{64}" else answer)

    with LoopbackServer(script=teacher) as server:
        r = runner.invoke(app, ["compile", "--integrate-only", "--teacher", "openai/t", "--base-url",
                                server.openai_base_url, "--store", str(store), "--json"])
        assert r.exit_code == 0, r.output
        summary = json.loads(r.stdout)
        assert (summary["compiled"], summary["had_integrate"], summary["failed_why"]) == (3, 0, {})
        assert server.total == 4  # one step each, and one re-ask
        again = runner.invoke(app, ["compile", "--integrate-only", "--teacher", "openai/t", "--base-url",
                                    server.openai_base_url, "--store", str(store), "--json"])
        assert again.exit_code == 0 and json.loads(again.stdout)["had_integrate"] == 3 and server.total == 4

    stored, attempts = asyncio.run(_read(store))
    for f in stored:
        assert f.integrate is not None and f.integrate.type is MilestoneType.INTEGRATE
        assert f.integrate.answer == f.parent_answer and problem_of(f) in f.integrate.prompt
        assert all(m.type is not MilestoneType.INTEGRATE for _, m in f.tested())  # the step stays private
    by_pid = {}
    for a in attempts:
        by_pid.setdefault(a.pid[:8], []).append(a)
    assert {pid: [a.passed for a in runs] for pid, runs in by_pid.items()} == {
        "f8a3e468": [True], "de4b7c19": [False, True], "8aa407cb": [True]}
    [error] = by_pid[WRONG_FIRST][0].errors
    assert error["check"] == CHECK_INTEGRATE and "'\\\\frac{27}{64}' is not equivalent" in error["reason"]
    assert by_pid[WRONG_FIRST][0].plan["canonical_answer"] == "\\frac{27}{64}"
    [reask] = [m for m in asked if len(m) > 2]
    assert f"[{CHECK_INTEGRATE}]: {error['reason']}" in reask[-1]["content"]
    # released records are exported as released: the step is not a released field
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["export", "--out", str(out), "--store", str(store)]).exit_code == 0
    assert all(len(json.loads(line)["milestones"]) == len(json.loads(orig)["milestones"])
               for line, orig in zip(out.read_text().splitlines(), lines))
