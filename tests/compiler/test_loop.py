"""The retry-on-error loop end to end: a scripted teacher in process (the compile loop itself, its
checks and its store), and through `ladder compile` against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.clients import ChatRequest, Client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import MathDomain
from oracleladder.schemas import MilestoneType
from oracleladder.store import Store
from oracleladder.testing import FakeProvider, LoopbackServer
from oracleladder.workers import WorkerPool
from tests.helpers.roots import BAD, GOOD, PROBLEM, asks_plan, solve


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_rejected_plan_is_reasked_with_every_failure_named(tmp_path: Path, verifier: WorkerPool,
                                                                 provider: str) -> None:
    """The same loop whichever provider the teacher is (an Anthropic teacher is asked for its plan in
    the prompt, the md_json structured mode)."""
    reasks: list[str] = []

    def teacher(request: ChatRequest) -> str:
        if asks_plan(request.messages):
            if len(request.messages) > 2:  # a re-ask: the previous plan and the validators' errors follow
                reasks.append(request.messages[-1]["content"])
                return json.dumps(GOOD)
            return json.dumps(BAD)
        return solve(request.messages)

    async with Store.open(tmp_path / "compile.sqlite") as store:
        client = Client(FakeProvider(teacher, name=provider), model="teacher", cache=store)
        outcomes = await Compiler(client, store, MathDomain(verifier)).compile_all([PROBLEM])
        attempts = await store.compile_attempts("roots", f"{provider}/teacher", granularity="default")
        family = await store.get_family("roots", source=f"{provider}/teacher")

    assert [o.ok for o in outcomes] == [True] and outcomes[0].attempts == 2
    assert len(reasks) == 1
    message = reasks[0]
    assert "Milestone 1" in message and "leak" in message  # gives the parent answer away
    assert "Milestone 2" in message and "atomicity" in message  # prose in the gold
    assert "Milestone 3" in message and "standalone" in message  # refers to the previous milestone

    assert [a.passed for a in attempts] == [False, True]
    first_checks = {(e["milestone"], e["check"]) for e in attempts[0].errors}
    assert {(0, "leak"), (1, "atomicity"), (2, "standalone_reference")} <= first_checks
    assert attempts[1].errors == []
    assert family is not None and family.provenance.attempts == 2
    assert [m.answer for m in family.milestones] == ["(x-2)(x-3)=0", "\\{2,3\\}"]
    assert family.integrate is not None and family.integrate.type is MilestoneType.INTEGRATE


def test_cli_compile_then_check(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oracleladder.cli import app

    def teacher(messages: list[dict], body: dict) -> str:
        return json.dumps(GOOD) if asks_plan(messages) else solve(messages)

    problems = tmp_path / "problems.jsonl"
    problems.write_text(PROBLEM.model_dump_json() + "\n" + '{"pid": "broken", "problem": "no answer"}\n')
    store, out = tmp_path / "s.sqlite", tmp_path / "families.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--base-url",
                                 "http://127.0.0.1:9/v1", "--store", str(store)])
    assert result.exit_code == 2 and "problems.jsonl:2: no answer or solution field among ['pid', 'problem']" in result.output

    problems.write_text(PROBLEM.model_dump_json() + "\n")
    with LoopbackServer(script=teacher) as server:
        result = runner.invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--base-url",
                                     server.openai_base_url, "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert (summary["compiled"], summary["failed"], summary["attempts_per_family"]) == (1, 0, {"1": 1})
        first_requests = server.total
        result = runner.invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--base-url",
                                     server.openai_base_url, "--store", str(store), "--json"])
        assert result.exit_code == 0 and server.total == first_requests  # resumed from the cache
    assert runner.invoke(app, ["export", "--out", str(out), "--teacher", "openai/t", "--store", str(store)]).exit_code == 0
    result = runner.invoke(app, ["check", str(out), "--json"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["pid"] == "roots" and lines[0]["passed"] is True
    assert lines[-1]["totals"]["families"] == 1 and lines[-1]["totals"]["atomic_share"] == 1.0
