"""A third domain (tests/domains/toy/arithmetic.py), one module written against the domain interface and
registered here, compiles and probes end to end through the loops and through the `ladder` command,
which know nothing of it: a scripted teacher and student on the loopback server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import make_client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import DOMAINS, register_domain
from oracleladder.ladder import ProbeConfig
from oracleladder.ladder.outcomes import Outcome, milestone_test, parent_outcome
from oracleladder.probe.runner import run_probe
from oracleladder.schemas import MathProblem
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.domains.toy.arithmetic import ArithDomain, ArithPlan
from tests.helpers import REPO

pytestmark = pytest.mark.timeout(180)

APPLES = MathProblem(pid="apples", problem="Ann has 3 bags of 4 apples and eats 2. How many apples are left?", answer="10")
TRAIN = MathProblem(pid="train", problem="A train runs 60 km an hour for 3 hours, then 20 km more. How far does it go?",
                    answer="200")
PLANS = {
    "apples": {"steps": [{"question": "What is 3 times 4?", "answer": 12},
                         {"question": "What is 12 minus 2?", "answer": 10}], "answer": 10},
    "train": {"steps": [{"question": "What is 60 times 3?", "answer": 180},
                        {"question": "What is 180 plus 20?", "answer": 200}], "answer": 200},
}
WRONG_APPLES = {**PLANS["apples"], "answer": 11}  # fails both checks: the final answer, and the last step's
GOLD = {s["question"]: s["answer"] for plan in PLANS.values() for s in plan["steps"]}


class Script:
    """The teacher: a wrong plan for `apples` and prose for `train` first, the right plans on the
    re-ask. The student: every step right; C1 wrong; C2 right for `apples` only; C3 right."""

    def __init__(self) -> None:
        self.teacher: list[list[dict]] = []

    def __call__(self, messages: list[dict], body: dict) -> str:
        if messages[0]["content"].startswith("Arithmetic tutor"):
            self.teacher.append(messages)
            pid = "apples" if "apples" in messages[1]["content"] else "train"
            if len(messages) > 2:
                return json.dumps(PLANS[pid])
            return json.dumps(WRONG_APPLES) if pid == "apples" else "Sure! First multiply, then add."
        user = messages[-1]["content"]
        if user in GOLD:
            return f"That is {GOLD[user]}."
        pid = "apples" if "apples" in user else "train"
        right = "=" in user or ("Step:" in user and pid == "apples")
        return f"So the answer is {PLANS[pid]['answer'] if right else 7}."


@pytest.fixture
def arith() -> Iterator[type[ArithDomain]]:
    register_domain(ArithDomain)
    yield ArithDomain
    del DOMAINS["arith"]


async def test_toy_domain_through_the_loops(tmp_path: Path, arith: type[ArithDomain]) -> None:
    script = Script()
    async with LoopbackServer(script=script) as server:
        async with Store.open(tmp_path / "arith.sqlite") as store:
            teacher = make_client("openai/teacher", base_url=server.openai_base_url, cache=store)
            outcomes = {o.pid: o for o in await Compiler(teacher, store, arith()).compile_all([APPLES, TRAIN])}
            attempts = {p: await store.compile_attempts(p, "openai/teacher") for p in ("apples", "train")}
            families = await arith().load_families(store, "openai/teacher")
            student = make_client("openai/student", base_url=server.openai_base_url, cache=store)
            config = ProbeConfig(student="openai/student", k=2)
            stored = await run_probe(arith(), families, config, client=student, store=store, run_id="r1",
                                     source="openai/teacher")
            rollouts = await store.rollouts(student="openai/student", run_id="r1")
            for client in (teacher, student):
                await client.aclose()

    # compile: both re-asked once, by the compiler's own loop, every call a stored attempt
    assert {p: (o.ok, o.attempts) for p, o in outcomes.items()} == {"apples": (True, 2), "train": (True, 2)}
    assert outcomes["apples"].family.plan == ArithPlan.model_validate(PLANS["apples"])
    assert len(script.teacher) == 4
    first = attempts["apples"][0]
    assert (first.passed, sorted(e["check"] for e in first.errors)) == (False, ["final", "last_step"])
    reask = next(m for m in script.teacher if len(m) > 2 and "apples" in m[1]["content"])[-1]["content"]
    assert "- Plan [final]: the final answer is 11, the problem's is 10" in reask
    assert "- Step 2 [last_step]" in reask
    assert [(a.attempt, a.passed, a.plan is None) for a in attempts["train"]] == [(0, False, True), (1, True, False)]
    assert "not a valid ArithPlan" in attempts["train"][0].errors[0]["reason"]
    assert sorted(f.pid for f in families) == ["apples", "train"]

    # probe: Stage 0 (2 steps) and 3 conditions, K=2, each graded by exact integer match
    assert stored == len(rollouts) == 2 * (2 + 3) * 2
    assert {r.source for r in rollouts} == {"openai/teacher"}
    by = {(r.pid, r.target, r.k): r.verdict for r in rollouts}
    assert by[("apples", "C1_direct", 0)].reason == "7 != 10" and by[("train", "m1", 1)].reason == "200 = 200"
    results = {r.pid: r for r in arith().collect_results(families, rollouts)}
    assert results["apples"].stage0 == {"m0": [True, True], "m1": [True, True]}
    assert results["train"].ladder == {"C1_direct": [False, False], "C2_descriptions": [False, False],
                                       "C3_gold_answers": [True, True]}
    assert milestone_test(results["apples"].stage0) and milestone_test(results["train"].stage0)
    assert parent_outcome(results["apples"].ladder) is Outcome.ROADMAP_NEEDED
    assert parent_outcome(results["train"].ladder) is Outcome.ANSWERS_NEEDED


def test_toy_domain_through_the_cli(tmp_path: Path, arith: type[ArithDomain]) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(p.model_dump_json() + "\n" for p in (APPLES, TRAIN)))
    store, out = str(tmp_path / "arith.sqlite"), tmp_path / "report"
    runner = CliRunner()
    with LoopbackServer(script=Script()) as server:
        url = server.openai_base_url
        result = runner.invoke(app, ["compile", str(problems), "--domain", "arith", "--teacher", "openai/t",
                                     "--base-url", url, "--store", store, "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert (summary["compiled"], summary["failed"], summary["attempts_per_family"]) == (2, 0, {"2": 2})
        result = runner.invoke(app, ["probe", "--domain", "arith", "--student", "openai/s", "--source", "openai/t",
                                     "--k", "2", "--base-url", url, "--store", store, "--json"])
        assert result.exit_code == 0, result.output
        probed = json.loads(result.stdout)
        assert (probed["families"], probed["requests"], probed["failed_jobs"]) == (2, 20, [])
        result = runner.invoke(app, ["probe", "--domain", "arith", "--student", "openai/s", "--source", "openai/t",
                                     "--base-url", server.openai_base_url, "--conditions", "C2-random", "--store", store])
        assert result.exit_code == 2 and "the arith ladder has no condition C2-random" in result.output
    result = runner.invoke(app, ["report", "--domain", "arith", "--student", "openai/s", "--source", "openai/t",
                                 "--store", store, "--out", str(out)])
    assert result.exit_code == 0, result.output
    outcomes = json.loads((out / "report.json").read_text())["students"]["openai/s"]["outcomes"]
    assert outcomes == {"Direct": 0, "Roadmap-Needed": 1, "Answers-Needed": 1, "Unrecovered": 0}
    result = runner.invoke(app, ["regrade", "--domain", "arith", "--student", "openai/s", "--source", "openai/t",
                                 "--store", store, "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["still_ungraded"] == 0, result.output
    result = runner.invoke(app, ["compile", str(problems), "--domain", "nope", "--teacher", "openai/t", "--store", store])
    assert result.exit_code == 2 and "unknown domain 'nope'; known: math, code, arith" in result.output


@pytest.mark.parametrize("loop, other", [("oracleladder.compiler.loop", "oracleladder.probe"),
                                         ("oracleladder.probe.runner", "oracleladder.compiler")])
def test_the_loops_do_not_import_each_other(loop: str, other: str) -> None:
    """The compile loop loads nothing of the prober and the probe loop nothing of the compiler: each
    knows only the domain interface (a domain's module loads when the domain is first asked for)."""
    code = f"import sys, {loop}; print(sorted(m for m in sys.modules if m.startswith('{other}')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout
