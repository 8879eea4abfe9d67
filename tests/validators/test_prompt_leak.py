"""The leak rule on every text a student is shown, on every path: a milestone description or prompt that
states the reference answer (as written, or an equivalent form), its correction, or a primitive that
states a gold, fails `ladder compile` (re-asked like a leaking gold), is reported by `ladder check`,
and is refused by `ladder import` at its file and line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, MilestoneType, to_released
from oracleladder.schemas.models import Milestone, Provenance
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators import check_prompt_leak

# pid prefix -> the milestone and the sentence added to its Milestone section
LEAKS = {
    "fe16d1aa": (0, " Note that the final answer of the whole problem is 260."),  # the reference answer
    "713ff8c1": (1, " The largest such palindrome turns out to be $49894$."),  # its correction
    "de4b7c19": (2, " The probability asked for is 0.578125 in the end."),  # 37/64, written another way
}


@pytest.fixture(scope="module")
def sample(release_data: Path) -> list[Family]:
    return list(read_jsonl(release_data / "families_sample.jsonl", Family))


def _leaking(sample: list[Family]) -> list[Family]:
    out = []
    for family in sample:
        if family.pid[:8] in LEAKS:
            i, sentence = LEAKS[family.pid[:8]]
            m = family.milestones[i]
            leaked = m.model_copy(update={"prompt": m.prompt.replace("\n\nOutput instruction:",
                                                                     f"{sentence}\n\nOutput instruction:")})
            family = family.model_copy(update={"milestones": [*family.milestones[:i], leaked,
                                                              *family.milestones[i + 1:]]})
        out.append(family)
    return out


def _write(path: Path, families: list[Family], **extra: dict) -> Path:
    write_jsonl(path, ({**to_released(f), **extra.get(f.pid, {})} for f in families))
    return path


def test_ladder_check_reports_a_prompt_that_states_the_answer_and_nothing_else(sample, tmp_path: Path) -> None:
    for families, expected in ((sample, {}), (_leaking(sample), {p: i for p, (i, _) in LEAKS.items()})):
        result = CliRunner().invoke(app, ["check", str(_write(tmp_path / "f.jsonl", families)), "--json"])
        lines = [json.loads(line) for line in result.output.splitlines()]
        found = {r["pid"][:8]: c["milestone"] for r in lines[:-1] for c in r["checks"]
                 if c["check"] == "prompt_leak" and not c["passed"]}
        assert found == expected  # the released sample itself: no prompt states its answer
        assert lines[-1]["totals"]["failures_by_check"].get("prompt_leak", 0) == len(expected)


def test_ladder_import_refuses_a_leaking_family_at_its_line(sample, tmp_path: Path) -> None:
    families = _leaking(sample)
    path = _write(tmp_path / "f.jsonl", families)
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["import", str(path), "--store", str(store)])
    line = 1 + next(n for n, f in enumerate(families) if f.pid[:8] in LEAKS)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}:{line}: pid {families[line - 1].pid}" in result.output and "[prompt_leak]" in result.output
    result = CliRunner().invoke(app, ["export", "--out", str(tmp_path / "out.jsonl"), "--store", str(store)])
    assert result.exit_code == 2 and not (tmp_path / "out.jsonl").exists()  # nothing imported: nothing to export
    result = CliRunner().invoke(app, ["import", str(_write(tmp_path / "clean.jsonl", sample)), "--store", str(store)])
    assert result.exit_code == 0 and f"imported {len(sample)} families" in result.output


def test_ladder_import_refuses_a_primitive_that_states_a_gold(sample, tmp_path: Path) -> None:
    family = next(f for f in sample if f.pid.startswith("fe16d1aa"))
    primitive = {"text": "Track the October 22 votes: the answer comes to 260 in the end.", "provenance": "teacher"}
    path = _write(tmp_path / "f.jsonl", [family], **{family.pid: {"primitive": primitive}})
    result = CliRunner().invoke(app, ["import", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2 and f"{path}:1: pid {family.pid}: primitive [primitive_leak]" in result.output


def _m(type_: str, description: str, gold: str) -> dict:
    return {"type": type_, "answer_schema": "NUMBER", "description": description, "canonical_answer": gold}


def test_compile_fails_a_plan_whose_description_states_the_answer(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"pid": "p", "problem": "A crate holds 13 rows of 15 apples. How many apples?",
                                "answer": "195"}) + "\n", encoding="utf-8")
    plan = {"milestones": [
        _m("COMPUTE", "A crate holds 13 rows of 10 apples. How many apples is that? Output the count.", "130"),
        _m("COMPUTE", "A crate holds 13 rows of 5 apples. How many apples is that? Output the count; the final "
                      "answer of the whole problem is 195.", "65"),
        _m("INTEGRATE", "Add the two counts.", "195")]}
    with LoopbackServer(script=lambda m, b: json.dumps(plan)) as server:
        result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                          server.openai_base_url, "--store", str(tmp_path / "s.sqlite"),
                                          "--max-attempts", "1", "--no-independent-solve", "--json"])
    summary = json.loads(result.stdout.splitlines()[-1])
    assert result.exit_code == 1 and summary["compiled"] == 0, summary  # it compiled, and its Stage 0 and C2 prompts gave 195 away
    (reason,) = summary["failed_why"]["p"]
    assert reason.startswith("prompt_leak: ") and "'195'" in reason


def test_a_sub_goal_restating_the_problem_states_no_answer_but_saying_it_does() -> None:
    """The answer's digits inside the problem's own equation are the problem's, not a leak; the same
    number stated on its own is one."""
    def family(description: str) -> Family:
        m = Milestone(type=MilestoneType.MODEL, description=description, answer="(x-500)(x-501)=0",
                      prompt=f"Problem: Find the sum of the real roots of $x^2-1001x+250500=0$.\n\nMilestone:\n"
                             f"{description}\n\nOutput instruction: put the final answer in \\boxed{{}}.")
        return Family(pid="q", parent_prompt="Find the sum of the real roots of $x^2-1001x+250500=0$.",
                      parent_answer="1001", milestones=[m], provenance=Provenance(source="t"))

    restated = family("Factor the left side of x^2-1001x+250500=0. Output the factored equation.")
    assert check_prompt_leak(restated.milestones[0], restated, 0).passed
    told = family("Factor the left side; the sum of the roots is then 1001. Output the factored equation.")
    assert not check_prompt_leak(told.milestones[0], told, 0).passed
