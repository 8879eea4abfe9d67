"""The leak rule on every text a student is shown, on every path: a milestone description or prompt that
states the reference answer (as written, or an equivalent form), its correction, or a primitive that
states a gold, fails `ladder compile` (re-asked like a leaking gold), is reported by `ladder check`,
and is listed by `ladder import`, which leaves the milestone out of Stage 0, C2 and C3 (the primitive
dropped) and imports the family."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.experiment import Experiment
from oracleladder.schemas import Family, MilestoneType, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.schemas.models import Milestone, Provenance
from oracleladder.testing import LoopbackServer
from oracleladder.validators import check_prompt_leak
from oracleladder.validators.leak import leaking_milestones

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


def test_ladder_import_lists_a_leaking_milestone_and_leaves_it_out(sample, tmp_path: Path) -> None:
    families = _leaking(sample)
    path = _write(tmp_path / "f.jsonl", families)
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["import", str(path), "--store", str(store)])
    assert result.exit_code == 0 and f"imported {len(sample)} families" in result.output, result.output
    for family in (f for f in families if f.pid[:8] in LEAKS):
        i = LEAKS[family.pid[:8]][0]
        assert f"leak rule: {family.pid} m{i} [prompt_leak] the milestone's prompt" in result.output
    left_out = {f.pid[:8]: f.leaking for f in asyncio.run(_stored(store))}
    assert all(LEAKS[p][0] in left_out[p] for p in LEAKS)


async def _stored(store: Path) -> list[Family]:
    async with Experiment(store) as ex:
        return await ex.store.families()


def test_ladder_import_lists_and_drops_a_primitive_that_states_a_gold(sample, tmp_path: Path) -> None:
    family = next(f for f in sample if f.pid.startswith("fe16d1aa"))
    primitive = {"text": "Track the October 22 votes: the answer comes to 260 in the end.", "provenance": "teacher"}
    path = _write(tmp_path / "f.jsonl", [family], **{family.pid: {"primitive": primitive}})
    result = CliRunner().invoke(app, ["import", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 0 and "imported 1 family from" in result.output, result.output
    assert f"leak rule: {family.pid} primitive [primitive_leak]" in result.output and ": dropped" in result.output


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


def test_a_number_the_problem_holds_states_no_answer_and_one_it_does_not_hold_does() -> None:
    """The 18 of the problem's $z^{18}=1$ is its data: a sub-goal naming it tells no answer (it was
    refused at import); the same sub-goal on a problem written $z^{2\\cdot 9}=1$ does state 18."""
    def family(equation: str) -> Family:
        problem = f"How many complex numbers $z$ satisfy ${equation}$?"
        description = "Write every solution as e^{2\\pi i k/n} with n = 18 and give the range of the integer k."
        m = Milestone(type=MilestoneType.MODEL, description=description, answer="0\\le k\\le 17",
                      prompt=f"Problem: {problem}\n\nMilestone:\n{description}\n\nOutput instruction: box it.")
        return Family(pid="z", parent_prompt=problem, parent_answer="18", milestones=[m],
                      provenance=Provenance(source="t"))

    data = family("z^{18}=1")
    assert check_prompt_leak(data.milestones[0], data, 0).passed
    hidden = family("z^{2\\cdot 9}=1")
    assert not check_prompt_leak(hidden.milestones[0], hidden, 0).passed


def test_a_garbled_reference_answer_is_no_leak_pattern_and_its_correction_is(release_data: Path) -> None:
    """x^{2}+y^{2}=1\\2 (the release's 26th family) reads as 1; the reference check marks it unusable, so
    the 1 of a prompt leaks nothing, nor does the circle x^{2}+y^{2}=1 of a gold. Corrected to 1+2d, a
    prompt stating 1+2d leaks it."""
    family = next(iter(read_jsonl(release_data / "families_leaks.jsonl", Family)))
    assert family.parent_answer == "x^{2}+y^{2}=1\\2"
    assert [check_prompt_leak(m, family, i).passed for i, m in family.tested()] == [True, True]
    assert leaking_milestones(family) == []
    told = family.model_copy(update={"parent_answer_corrected": "x^{2}+y^{2}=1+2d"})
    m = told.milestones[0].model_copy(update={"description": "The locus is x^{2}+y^{2}=1+2d; state the circle."})
    assert not check_prompt_leak(m, told, 0).passed
