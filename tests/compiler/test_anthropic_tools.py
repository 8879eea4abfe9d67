"""An ``anthropic/`` teacher in structured mode tools, online and through Message Batches, against the
loopback server speaking Anthropic's wire: every plan call forces its tool (tool_choice names it, the
schema is the tool's input_schema, the system prompt is the top-level ``system``), a reply that is not
a valid plan is asked again with the errors as the tool_use's tool_result, a plan the checks reject is
asked again with the checks' errors, and every attempt is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracleladder import Endpoint, Experiment
from oracleladder.testing import LoopbackServer
from tests.helpers.roots import BAD, GOOD

PROBLEMS = [{"pid": f"roots{i}", "answer": "5",
             "problem": f"Find the sum of the real roots of $x^2-5x+6=0$. (Variant {i}.)"} for i in range(3)]
NOT_A_PLAN = {"milestones": "none"}  # JSON, but no TeacherPlan: pydantic rejects it


def teacher(bodies: list[dict[str, Any]]) -> Any:
    """Variant 0 answers first with no plan, variant 1 with a plan the checks reject, variant 2 well;
    each asked again answers well."""
    def answer(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
        bodies.append(body)
        first = len(body["messages"]) == 1
        variant = int(str(body["messages"][0]["content"]).split("(Variant ")[1][0])
        return json.dumps(NOT_A_PLAN if first and variant == 0 else BAD if first and variant == 1 else GOOD)
    return answer


@pytest.mark.parametrize("batch", [False, True])
async def test_an_anthropic_teacher_in_tools_mode(tmp_path: Path, batch: bool) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    bodies: list[dict[str, Any]] = []
    async with LoopbackServer(teacher(bodies), batch_delay=0.1) as srv, Experiment(tmp_path / "s.sqlite") as ex:
        endpoint = Endpoint("anthropic/claude", base_urls=[srv.anthropic_base_url], structured="tools",
                            batch=batch, batch_poll=0.1, batch_quiet=0.2)
        summary = await ex.compile(pool, endpoint, independent_solve=False)
        attempts = {p["pid"]: await ex.store.compile_attempts(p["pid"], "anthropic/claude") for p in PROBLEMS}
        batches = srv.batches.creates
    assert summary.compiled == 3
    assert (srv.total, batches) == ((5, 0) if not batch else (0, 2))  # online: 5 requests; batch: two rounds
    assert len(bodies) == 5
    for body in bodies:  # the tool forced, the schema once (as its input_schema), the system prompt on top
        (tool,) = body["tools"]
        assert body["tool_choice"]["type"] == "tool" and body["tool_choice"]["name"] == tool["name"] == "TeacherPlan"
        assert '"properties"' in json.dumps(tool["input_schema"])
        assert '"properties"' not in json.dumps(body["system"]) + json.dumps(body["messages"])
        assert all(m["role"] != "system" for m in body["messages"]) and "Mathematics Mentor" in json.dumps(body["system"])
    reasks = [b["messages"] for b in bodies if len(b["messages"]) > 1]
    invalid = next(m for m in reasks if "Variant 0" in str(m[0]["content"]))
    assert invalid[1]["role"] == "assistant" and invalid[1]["content"][0]["type"] == "tool_use"
    assert invalid[1]["content"][0]["input"] == NOT_A_PLAN
    (result,) = invalid[2]["content"]  # the tool_use answered by a tool_result carrying the errors
    assert result["type"] == "tool_result" and result["tool_use_id"] == invalid[1]["content"][0]["id"]
    assert result["is_error"] and "milestones: Input should be a valid array" in result["content"]
    rejected = next(m for m in reasks if "Variant 1" in str(m[0]["content"]))  # the checks' errors, as text
    assert rejected[1]["role"] == "assistant" and rejected[2]["role"] == "user"
    assert rejected[2]["content"].startswith("Your plan was rejected by the deterministic validators")
    assert [(len(a), [x.passed for x in a]) for a in attempts.values()] == \
        [(2, [False, True]), (2, [False, True]), (1, [True])]
    assert "milestones: Input should be a valid array" in attempts["roots0"][0].errors[0]["reason"]
