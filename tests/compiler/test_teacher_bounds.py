"""A teacher cannot flood a compile: a plan past the bounds of its schema (milestones, a description's
or a gold's length; a code packet's helpers) is one failed attempt with a readable reason, refused as
it is read, before any check or independent solve; counted at the loopback server."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer

PROBLEM = {"pid": "flood", "problem": "Find the sum of the first 10000 positive integers.", "answer": "50005000"}


def _milestone(type_: str, description: str, gold: str) -> dict:
    return {"type": type_, "answer_schema": "NUMBER", "description": description, "canonical_answer": gold}


def _compile(tmp_path: Path, plan: dict, *args: str, pool: str | None = None) -> tuple[dict, int]:
    """One compile attempt of PROBLEM (or ``pool``) with a teacher that always replies ``plan`` (which
    fails) and answers every other call (an independent solve) with its own count: the summary and the
    requests."""
    tmp_path.mkdir(exist_ok=True)
    if pool is None:
        path = tmp_path / "pool.jsonl"
        path.write_text(json.dumps(PROBLEM) + "\n", encoding="utf-8")
        pool = str(path)

    def teacher(messages: list[dict], body: dict) -> str:
        return json.dumps(plan) if "Milestone:" not in messages[-1]["content"] else "so \\boxed{1}"

    with LoopbackServer(script=teacher) as server:
        result = CliRunner().invoke(app, ["compile", pool, "--teacher", "openai/t", "--base-url",
                                          server.openai_base_url, "--store", str(tmp_path / "s.sqlite"),
                                          "--max-attempts", "1", "--json", *args])
        requests = server.total
    assert result.exit_code == 1, result.output  # no family: a compile that compiled nothing fails
    return json.loads(result.stdout.splitlines()[-1]), requests


def test_a_plan_of_ten_thousand_milestones_is_one_failed_attempt_and_no_solve(tmp_path: Path) -> None:
    flood = {"milestones": [_milestone("COMPUTE", f"Compute the sum of the integers from 1 to {i}. Output the sum.",
                                       str(i * (i + 1) // 2)) for i in range(1, 10_000)]
             + [_milestone("INTEGRATE", "Give the sum of the first 10000 positive integers.", "50005000")]}
    summary, requests = _compile(tmp_path, flood)
    assert requests == 1  # the plan itself; it made no independent solve (10,001 requests before)
    assert summary["compiled"] == 0 and summary["infrastructure_failures"] == 0
    (reason,) = summary["failed_why"]["flood"]
    assert reason.startswith("teacher: the reply is not a valid TeacherPlan") and "10000 milestones; at most 20" in reason


def test_a_description_or_gold_past_its_bound_is_a_failed_attempt(tmp_path: Path) -> None:
    for field, text, bound in (("description", "Compute the sum of 1 and 2. " * 1_000, "at most 4000"),
                               ("canonical_answer", "1" * 5_000, "at most 1000")):
        plan = {"milestones": [_milestone("COMPUTE", "Compute the sum of 1 and 2. Output the sum.", "3"),
                               _milestone("COMPUTE", "Compute the sum of 3 and 4. Output the sum.", "7"),
                               _milestone("INTEGRATE", "Give the sum.", "50005000")]}
        plan["milestones"][1][field] = text
        summary, requests = _compile(tmp_path / field, plan)
        (reason,) = summary["failed_why"]["flood"]
        assert requests == 1 and f"milestones.1.{field}" in reason and bound in reason, reason


def test_a_code_packet_of_a_thousand_helpers_is_one_failed_attempt(tmp_path: Path) -> None:
    helper = {"name": "f", "signature": "def f(x: int) -> int:", "docstring": "Return x.",
              "asserts": ["assert f(1) == 1", "assert f(2) == 2"], "gold": "def f(x: int) -> int:\n    return x\n"}
    packet = {"plan": "Return the input.", "helpers": [helper] * 1_000, "program": "def f(x):\n    return x\n"}
    summary, requests = _compile(tmp_path, packet, "--domain", "code", pool="humaneval:1")
    (reason,) = summary["failed_why"]["HumanEval/0"]
    assert requests == 1 and "helpers: Value error, 1000 helpers; at most 12" in reason, reason
