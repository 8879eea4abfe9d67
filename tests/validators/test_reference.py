"""Reference answers get the golds' checks plus a truncation check: in `ladder check`, in compile
(skipped with the reason before any teacher call), and as a function the report can call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import make_client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import MathDomain
from oracleladder.schemas import MathProblem
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from oracleladder.validators import answer_problem
from oracleladder.workers import WorkerPool

runner = CliRunner()

UNUSABLE = [  # the five released ones (issue 16), and two more truncations in corrections.jsonl
    r"\1", "x_1=x_2=", "15to25", r"0\leqslant|+b|\leqslant2",
    r"n=3,x_{1}=x_{2}=x_{3}=1;\,n=2,x_{1}=\frac{3+\sqrt{5}}{2},x_{2}=\frac{3-\sqrt{5}}{2};\,n=1,",
    r"\leqslant-2", r"=2,b=\frac{1}{4}", r"\frac{1}{2", r"\begin{pmatrix}1&2\\3&4", "x+", "",
]
USABLE = [  # near misses of each rule that are sound answers
    r"\pm 1", "x_1=x_2", r"15 \text{ to } 25", r"0\leqslant|az+b|\leqslant2", "n=1, 2", r"a \leq -2",
    r"a=2, b=\frac{1}{4}", r"|a|+|b|", r"[1,+\infty)", r"\mathbb{Z}^{+}", r"\{2, 3\}", "2k", "100m+n",
    r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"4 \text{ or } 2 \frac{1}{4}", r"x'", r"C_{70}^{28}",
]


@pytest.mark.parametrize("answer", UNUSABLE)
def test_unusable_reference_answers_are_flagged(answer: str) -> None:
    assert answer_problem(answer)


@pytest.mark.parametrize("answer", USABLE)
def test_sound_reference_answers_pass(answer: str) -> None:
    assert answer_problem(answer) is None


def test_every_malformed_gold_of_the_judged_sample_is_flagged(release_data: Path) -> None:
    rows = [json.loads(line) for line in (release_data / "judged_sample.jsonl").open()]
    flagged = {r["item"] for r in rows if answer_problem(r["canonical"])}
    assert flagged == {r["item"] for r in rows if r["label"] == "malformed_gold"}


def test_corrections_repair_every_flagged_original(release_data: Path) -> None:
    rows = [json.loads(line) for line in (release_data / "corrections.jsonl").open()]
    rows = [r for r in rows if r["field"] == "parent_answer"]
    flagged = {r["pid"][:8] for r in rows if answer_problem(r["original"])}
    assert flagged == {"a3a636a8", "330cbc5a", "b36a1161", "41348e33", "860813bf", "e24a0cbb", "cdfc31d2"}
    # the one corrected answer still flagged states its condition in prose: "x_1=x_2 (a nonzero integer)"
    assert {r["pid"][:8] for r in rows if answer_problem(r["corrected"])} == {"41348e33"}


def _check(path: Path, *extra: str) -> list[dict]:
    result = runner.invoke(app, ["check", str(path), "--json", *extra])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_ladder_check_flags_the_unusable_reference_answers_and_nothing_else(release_data: Path) -> None:
    lines = _check(release_data / "families_sample.jsonl")
    totals = lines[-1]["totals"]
    bad = {r["pid"][:8] for r in lines[:-1] for c in r["checks"] if c["check"] == "reference_answer" and not c["passed"]}
    assert bad == {"b36a1161", "1f15af3f"}  # "\1", and a pmatrix cut off before its \end
    assert totals["failures_by_check"]["reference_answer"] == 2
    assert totals["families_passed"] == 38  # 40 before the check: exactly these two are new
    fixed = _check(release_data / "families_sample.jsonl", "--use-corrections")
    assert {r["pid"][:8] for r in fixed[:-1] for c in r["checks"]
            if c["check"] == "reference_answer" and not c["passed"]} == {"1f15af3f"}


async def test_compile_skips_an_unusable_reference_answer_before_paying_a_teacher(tmp_path: Path) -> None:
    calls: list[list[dict]] = []

    def teacher(messages: list[dict], body: dict) -> str:
        calls.append(messages)
        return "{}"

    problem = MathProblem(pid="cut", problem="Find all x_1, x_2 such that ...", answer="x_1=x_2=")
    async with LoopbackServer(script=teacher) as server:
        store = await Store.open(tmp_path / "compile.sqlite")
        client = make_client("openai/teacher", base_url=server.openai_base_url, api_key="k", cache=store)
        with WorkerPool(workers=1) as pool:
            outcomes = await Compiler(client, store, MathDomain(pool)).compile_all([problem])
        attempts = await store.compile_attempts("cut", "openai/teacher", granularity="default")
        await client.aclose()
        await store.close()
    assert calls == []
    assert not outcomes[0].ok and outcomes[0].errors[0].check == "reference_answer"
    assert "dangling '='" in outcomes[0].errors[0].reason
    assert len(attempts) == 1 and attempts[0].errors[0]["check"] == "reference_answer"
