"""The retry-on-error loop end to end, against a scripted teacher on the loopback server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from oracleladder.clients import make_client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import MathDomain
from oracleladder.verify import VerifierPool
from oracleladder.schemas import MathProblem, MilestoneType
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

PROBLEM = MathProblem(pid="roots", problem="Find the sum of the real roots of $x^2-5x+6=0$.", answer="5")


def _m(type_: str, schema: str, description: str, gold: str) -> dict:
    return {"type": type_, "answer_schema": schema, "description": description, "canonical_answer": gold}


BAD = {"milestones": [
    _m("COMPUTE", "NUMBER", "Compute the sum of the roots of x^2-5x+6=0. Output the sum.", "5"),
    _m("MODEL", "EXPR", "Find one root of x^2-5x+6=0. Output the root.", "x = 2, so the other root is 3"),
    _m("LEMMA", "SET", "Using the previous milestone, list all roots of x^2-5x+6=0. Output the set.", "\\{2,3\\}"),
    _m("INTEGRATE", "NUMBER", "Add the roots.", "5"),
]}
GOOD = {"milestones": [
    _m("MODEL", "EQUATION", "Factor the left side of x^2-5x+6=0. Output the factored equation.", "(x-2)(x-3)=0"),
    _m("COMPUTE", "SET", "Solve the equation (x-2)(x-3)=0 for real x. Output the solution set.", "\\{2,3\\}"),
    _m("INTEGRATE", "NUMBER", "Add the real roots of x^2-5x+6=0.", "5"),
]}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_rejected_plan_is_reasked_with_every_failure_named(tmp_path: Path, wire: str) -> None:
    """The same loop whichever wire format the teacher speaks (an Anthropic teacher gets the system
    prompt in its own field)."""
    reasks: list[str] = []

    def teacher(messages: list[dict], body: dict) -> str:
        if "Mathematics Mentor" in messages[0]["content"]:
            if len(messages) > 2:  # a re-ask: the previous plan and the validators' errors follow
                reasks.append(messages[-1]["content"])
                return json.dumps(GOOD)
            return json.dumps(BAD)
        # the independent solve: answer the milestone from its own prompt
        description = re.search(r"Milestone:\n(.*?)\n\nOutput instruction", messages[-1]["content"], re.S).group(1)
        gold = next(m["canonical_answer"] for m in GOOD["milestones"] if m["description"] == description)
        return f"Working it out gives \\boxed{{{gold}}}."

    async with LoopbackServer(script=teacher) as server:
        store = await Store.open(tmp_path / "compile.sqlite")
        base_url = server.openai_base_url if wire == "openai" else server.anthropic_base_url
        client = make_client(f"{wire}/teacher", base_url=base_url, api_key="k", cache=store)
        with VerifierPool(workers=1) as pool:
            outcomes = await Compiler(client, store, MathDomain(pool)).compile_all([PROBLEM])
        attempts = await store.compile_attempts("roots", f"{wire}/teacher", granularity="default")
        family = await store.get_family("roots", source=f"{wire}/teacher")
        await client.aclose()
        await store.close()

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
        if "Mathematics Mentor" in messages[0]["content"]:
            return json.dumps(GOOD)
        description = re.search(r"Milestone:\n(.*?)\n\nOutput instruction", messages[-1]["content"], re.S).group(1)
        return "\\boxed{%s}" % next(m["canonical_answer"] for m in GOOD["milestones"] if m["description"] == description)

    problems = tmp_path / "problems.jsonl"
    problems.write_text(PROBLEM.model_dump_json() + "\n" + '{"pid": "broken", "problem": "no answer"}\n')
    store, out = tmp_path / "s.sqlite", tmp_path / "families.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["compile", str(problems), "--teacher", "openai/t", "--store", str(store)])
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
