"""Appendix T's leak-safe conditions (2) and (3) where a program decides them: each constructed gold is
flagged, a near miss of it is not; `ladder check` reports the check, and the compile loop re-asks the
teacher with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.clients import ChatRequest, Client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import MathDomain
from oracleladder.schemas import Family, Milestone, MilestoneType
from oracleladder.store import Store
from oracleladder.testing import FakeProvider
from oracleladder.validators import check_family
from oracleladder.validators.leak import CHECK_TRANSFORM, transformation
from oracleladder.workers import WorkerPool
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, milestone, solve

# (gold, parent answer, what the reason says; a near miss of the same gold that is no leak)
FLAGGED = [
    ("-5", "5", "sign flipped", "-4"),
    ("-\\frac{3}{4}", "\\frac{3}{4}", "sign flipped", "-\\frac{3}{5}"),
    ("50\\%", "\\frac{1}{2}", "times 100 (a percent)", "50"),  # no percent said: 50 is no unit factor of 1/2
    ("0.35", "35\\%", "divided by 100 (a percent)", "0.36"),
    ("60", "\\frac{\\pi}{3}", "in degrees", "61"),
    ("\\frac{\\pi}{4}", "45^\\circ", "in radians", "\\frac{\\pi}{3}"),
    ("\\{-1,1\\}", "x=\\pm 1", "cases recombined", "\\{-1,2\\}"),
    ("60, 36, 30", "30,36,60", "cases recombined", "30, 36"),
    ("x=1 \\text{ or } x=-1", "\\{1,-1\\}", "cases recombined", "x=1"),
    ("s^2=884-440\\sqrt{3}", "884-440\\sqrt{3}", "one side of an equation", "s^2=884-440\\sqrt{2}"),
    ("1.414", "\\sqrt{2}", "rounded to a decimal", "1.5"),
    ("0.333", "\\frac{1}{3}", "rounded to a decimal", "0.34"),
    ("3.14", "\\pi", "rounded to a decimal", "3.1"),  # one place: too coarse to call the answer's rounding
]


@pytest.mark.parametrize("gold, answer, how, near", FLAGGED)
def test_each_trivial_transformation_is_flagged_and_its_near_miss_is_not(gold, answer, how, near):
    said = transformation(gold, answer)
    assert said is not None and how in said, (gold, answer, said)
    assert transformation(near, answer) is None, (near, answer)


def test_a_tuple_list_is_no_recombination_of_its_numbers():
    assert transformation("(10,20),(35,15)", "10,20,35,15") is None


def _family(gold: str, answer: str) -> Family:
    ms = [Milestone(prompt="Factor x^2-5x+6. Output the factored form.", answer="(x-2)(x-3)", type=MilestoneType.MODEL),
          Milestone(prompt="State the value asked for.", answer=gold, type=MilestoneType.COMPUTE)]
    return Family(pid="p", parent_prompt="Find the sum of the roots of x^2-5x+6=0, negated.", parent_answer=answer,
                  milestones=ms)


def test_check_family_reports_the_transformation_on_its_milestone():
    failed = [c for c in check_family(_family("5", "-5")).failures() if c.check == CHECK_TRANSFORM]
    assert [(c.milestone, "sign flipped" in c.reason) for c in failed] == [(1, True)]
    assert not [c for c in check_family(_family("6", "-5")).failures() if c.check == CHECK_TRANSFORM]
    # a gold that restates the answer fails the leak check only
    assert CHECK_TRANSFORM not in {c.check for c in check_family(_family("-5", "-5")).failures()}


async def test_the_compile_loop_reasks_the_teacher_with_the_transformation(tmp_path: Path, verifier: WorkerPool):
    flipped = {"milestones": [GOOD["milestones"][0], milestone(
        "COMPUTE", "NUMBER", "Compute the negative of the sum of the real roots of x^2-5x+6=0. Output it.", "-5"),
        GOOD["milestones"][2]]}
    reasks: list[str] = []

    def teacher(request: ChatRequest) -> str:
        if asks_plan(request.messages):
            if len(request.messages) > 2:
                reasks.append(request.messages[-1]["content"])
                return json.dumps(GOOD)
            return json.dumps(flipped)
        return solve(request.messages)

    async with Store.open(tmp_path / "c.sqlite") as store:
        client = Client(FakeProvider(teacher, name="openai"), model="teacher", cache=store)
        [outcome] = await Compiler(client, store, MathDomain(verifier)).compile_all([PROBLEM])
        attempts = await store.compile_attempts("roots", "openai/teacher", granularity="default")
    assert outcome.ok and outcome.attempts == 2
    [first] = [e for e in attempts[0].errors if e["check"] == CHECK_TRANSFORM]
    assert first["milestone"] == 1 and "sign flipped" in first["reason"]
    assert "Milestone 2" in reasks[0] and f"[{CHECK_TRANSFORM}]: {first['reason']}" in reasks[0]
