"""The code-packet retry loop end to end: a scripted teacher on the loopback server, real sandbox checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.clients import make_client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains.code import CodeDomain, load_code_families, load_packets, render_code_errors, teacher_messages
from oracleladder.domains.code.packet import CodePacket
from oracleladder.domains.code.problems import load_humaneval
from oracleladder.schemas import CheckResult, FamilyReport
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

pytestmark = pytest.mark.timeout(180)

GAPS_GOLD = ("def adjacent_gaps(xs: list[float]) -> list[float]:\n    s = sorted(xs)\n"
             "    return [b - a for a, b in zip(s, s[1:])]\n")
ANY_BELOW_GOLD = "def any_below(values: list[float], t: float) -> bool:\n    return any(v < t for v in values)\n"
PROGRAM = (
    "from typing import List\n\n"
    + GAPS_GOLD + "\n\n" + ANY_BELOW_GOLD + "\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    return any_below(adjacent_gaps(numbers), threshold)\n"
)
BAD_ASSERT = "assert adjacent_gaps([3.0, 1.0, 2.0]) == [2.0, 1.0]"  # wrong expected value: gold gives [1.0, 1.0]


def packet(first_assert: str) -> dict:
    return {
        "plan": "Sort the numbers so that the closest pair is adjacent, take the gaps between neighbours, "
                "and report whether any gap is below the threshold.",
        "helpers": [
            {"name": "adjacent_gaps", "signature": "def adjacent_gaps(xs: list[float]) -> list[float]:",
             "docstring": "Return the differences between consecutive elements of sorted(xs); [] if len(xs) < 2.",
             "asserts": [first_assert, "assert adjacent_gaps([5.0]) == []"],
             "gold": GAPS_GOLD},
            {"name": "any_below", "signature": "def any_below(values: list[float], t: float) -> bool:",
             "docstring": "Return True if some value in values is strictly less than t.",
             "asserts": ["assert any_below([0.5, 2.0], 1.0) is True", "assert any_below([], 1.0) is False"],
             "gold": ANY_BELOW_GOLD},
        ],
        "program": PROGRAM,
    }


BAD = packet(BAD_ASSERT)
GOOD = packet("assert adjacent_gaps([3.0, 1.0, 2.0]) == [1.0, 1.0]")


def test_teacher_prompt_names_the_packet_fields_and_interface():
    problem = load_humaneval(limit=1)[0]
    messages, version = teacher_messages(problem)
    system, user = messages[0]["content"], messages[1]["content"]
    for key in ('"plan"', '"helpers"', '"program"', '"name"', '"signature"', '"docstring"', '"asserts"', '"gold"'):
        assert key in system
    assert "has_close_elements" in system and "JSON" in system and "{interface}" not in system
    assert problem.statement.strip() in user and "Reference solution" in user
    assert len(version) == 12


def test_render_code_errors_names_helpers():
    p = CodePacket.model_validate(GOOD)
    report = FamilyReport(pid="X", checks=[
        CheckResult(check="helper_gold_passes_asserts", passed=False, milestone=1, reason="boom"),
        CheckResult(check="program_passes_tests", passed=False, reason="1/2"),
        CheckResult(check="helper_asserts", passed=True, milestone=0),
    ])
    text = render_code_errors(report, p)
    assert "failed 2 check(s)" in text
    assert "- Helper 2 (any_below) [helper_gold_passes_asserts]: boom" in text
    assert "- Packet [program_passes_tests]: 1/2" in text


async def test_rejected_packet_is_reasked_with_the_failing_assert(tmp_path: Path) -> None:
    problem = load_humaneval(limit=1)[0]
    assert problem.pid == "HumanEval/0" and problem.entry_point == "has_close_elements"
    reasks: list[list[dict]] = []

    def teacher(messages: list[dict], body: dict) -> str:
        assert "Programming Mentor" in messages[0]["content"]
        if len(messages) > 2:
            reasks.append(messages)
            return json.dumps(GOOD)
        return json.dumps(BAD)

    async with LoopbackServer(script=teacher) as server:
        store = await Store.open(tmp_path / "compile.sqlite")
        client = make_client("openai/teacher", base_url=server.openai_base_url, cache=store)
        compiler = Compiler(client, store, CodeDomain())
        assert compiler.max_attempts == 3
        outcomes = await compiler.compile_all([problem])
        attempts = await store.compile_attempts("HumanEval/0", "openai/teacher")
        packets = await load_packets(store, "openai/teacher")
        report = await store.get_report("HumanEval/0", "openai/teacher")
        families = await load_code_families(store, "openai/teacher")
        # a rerun replays the cached teacher calls: no new request reaches the server
        before = server.total
        again = await Compiler(client, store, CodeDomain()).compile(problem)
        replayed = server.total - before
        await client.aclose()
        await store.close()

    assert [o.ok for o in outcomes] == [True] and outcomes[0].attempts == 2
    assert type(outcomes[0].family.packet) is CodePacket and outcomes[0].family.packet == CodePacket.model_validate(GOOD)
    assert again.ok and again.attempts == 2 and replayed == 0

    # the re-ask: the previous packet as the assistant turn, then the failing assert and its traceback
    assert len(reasks) == 1
    msgs = reasks[0]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert CodePacket.model_validate_json(msgs[2]["content"]) == CodePacket.model_validate(BAD)
    reask = msgs[3]["content"]
    assert "Helper 1 (adjacent_gaps) [helper_gold_passes_asserts]" in reask
    assert BAD_ASSERT in reask
    assert "actual: [1.0, 1.0], expected: [2.0, 1.0]" in reask
    assert "AssertionError" in reask and "Traceback" in reask
    assert "any_below" not in reask.split("failed", 1)[1].split("\n- ")[0]  # only the failing helper is named

    # both attempts stored, with the errors of the first and the packet as the passing plan
    assert [a.attempt for a in attempts] == [0, 1]
    assert [a.passed for a in attempts] == [False, True]
    first = attempts[0].errors
    assert [(e["check"], e["milestone"]) for e in first] == [("helper_gold_passes_asserts", 0)]
    assert BAD_ASSERT in first[0]["reason"]
    assert attempts[1].errors == []
    assert CodePacket.model_validate(attempts[0].plan) == CodePacket.model_validate(BAD)
    assert attempts[1].plan["prompt_version"] == teacher_messages(problem)[1]
    assert packets == {"HumanEval/0": CodePacket.model_validate(GOOD)}
    assert report is not None and report.passed
    assert [(f.pid, f.problem, f.packet) for f in families] == [("HumanEval/0", problem, CodePacket.model_validate(GOOD))]


async def test_three_rejections_give_up(tmp_path: Path) -> None:
    """A teacher that never fixes its program: 3 attempts, each stored, no packet, parent-test errors kept."""
    problem = load_humaneval(limit=1)[0]
    broken = dict(GOOD, program=PROGRAM.replace("return any_below(", "return not any_below("))

    async with LoopbackServer(script=lambda messages, body: json.dumps(broken)) as server:
        store = await Store.open(tmp_path / "compile.sqlite")
        client = make_client("openai/teacher", base_url=server.openai_base_url, cache=store)
        outcome = await Compiler(client, store, CodeDomain()).compile(problem)
        attempts = await store.compile_attempts("HumanEval/0", "openai/teacher")
        packets = await load_packets(store, "openai/teacher")
        await client.aclose()
        await store.close()

    assert not outcome.ok and outcome.attempts == 3
    assert [a.passed for a in attempts] == [False, False, False]
    reason = next(e.reason for e in outcome.errors if e.check == "program_passes_tests")
    assert "parent tests" in reason and "actual" in reason and "expected" in reason
    assert packets == {}


async def test_unusable_teacher_answer_is_a_stored_failure(tmp_path: Path) -> None:
    """Prose instead of a packet: each teacher call is one stored failed attempt with the reason, re-asked
    with the reply and what is wrong with it; no call is hidden in a re-ask of the structured call."""
    problem = load_humaneval(limit=1)[0]
    asked: list[list[dict]] = []

    def prose(messages: list[dict], body: dict) -> str:
        asked.append(messages)
        return "Here is my plan, in words."

    async with LoopbackServer(script=prose) as server:
        async with Store.open(tmp_path / "compile.sqlite") as store:
            client = make_client("openai/teacher", base_url=server.openai_base_url, cache=store)
            [outcome] = await Compiler(client, store, CodeDomain()).compile_all([problem])
            attempts = await store.compile_attempts("HumanEval/0", "openai/teacher")
            await client.aclose()
        calls = server.total

    assert not outcome.ok and outcome.attempts == 3
    assert [e.check for e in outcome.errors] == ["teacher"]
    assert "not a valid CodePacket" in outcome.errors[0].reason and "Invalid JSON" in outcome.errors[0].reason
    assert calls == len(asked) == len(attempts) == 3  # one call per attempt, every one stored
    assert [(a.attempt, a.passed, a.plan) for a in attempts] == [(0, False, None), (1, False, None), (2, False, None)]
    assert all(a.errors[0]["reason"] == outcome.errors[0].reason for a in attempts)
    # the re-ask: the reply as the assistant turn, then its validation errors
    assert [m["role"] for m in asked[2][-4:]] == ["assistant", "user", "assistant", "user"]
    assert asked[1][-2]["content"] == "Here is my plan, in words."
    assert "Invalid JSON" in asked[1][-1]["content"] and "Correct your JSON" in asked[1][-1]["content"]  # instructor's re-ask


def test_cli_code_compile_probe_report(tmp_path: Path) -> None:
    """`--domain code` end to end from the command line: compile HumanEval/0, probe, report."""
    from typer.testing import CliRunner

    from oracleladder.cli import app

    def both(messages: list[dict], body: dict) -> str:
        if "packet" in messages[0]["content"].lower() and "helper" in messages[0]["content"].lower() \
                and "JSON" in messages[0]["content"]:
            return json.dumps(GOOD)
        return f"```python\n{PROGRAM}\n{GAPS_GOLD}\n{ANY_BELOW_GOLD}\n```"  # a student that writes the gold

    store, out = str(tmp_path / "code.sqlite"), tmp_path / "rep"
    runner = CliRunner()
    with LoopbackServer(script=both) as server:
        url = server.openai_base_url
        result = runner.invoke(app, ["compile", "humaneval:1", "--domain", "code", "--teacher", "openai/t",
                                     "--base-url", url, "--store", store, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["compiled"] == 1
        result = runner.invoke(app, ["probe", "--domain", "code", "--student", "openai/s", "--source", "openai/t",
                                     "--k", "1", "--base-url", url, "--store", store])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["report", "--domain", "code", "--student", "openai/s", "--source", "openai/t",
                                 "--store", store, "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["students"]["openai/s"]["taxonomy"]["Direct"] == 1
