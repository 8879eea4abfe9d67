"""`ladder prim compile` through the one compile loop against the loopback server: a teacher primitive
that states the answer, a plan of two steps, or a curation primitive of a type off the taxonomy (asked
only once the problem has a reference solution) fails its check and is re-asked with the error; the
accepted one is stored as the problem's guidance of that kind by that teacher, every attempt kept;
then `prim probe --primitive-source plan` shows the plan, its --dry-run counting the calls first."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

TEACHER = "openai/teacher"
B = "de4b7c19-3f71-44b8-8ee3-7cfeb7bd18f6"  # the cube problem: answer 37/64


def test_teacher_guidance_is_checked_reasked_and_stored(tmp_path: Path, release_data: Path) -> None:
    store, fams = tmp_path / "s.sqlite", tmp_path / "families.jsonl"
    line = next(x for x in (release_data / "families_sample.jsonl").read_text().splitlines() if B in x)
    fams.write_text(line + "\n")
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(fams), "--store", str(store)]).exit_code == 0

    def teacher(messages: list[dict], body: dict) -> str:
        retried = len(messages) > 1
        if "## Rationale:" in messages[0]["content"]:  # the curation prompt: a type off the taxonomy first
            assert "## Answer:\n\\frac{37}{64}" in messages[0]["content"]
            return json.dumps({"essential_property": "Face membership depends only on distances.",
                               "solution_principle": "Condition on the distance class of Q.",
                               "core_concept": "Fix P and classify Q by distance.",
                               "primary_primitive_type": "hidden_structure" if retried else "counting",
                               "secondary_primitive_types": [], "classification_rationale": "", "confidence": 4})
        if '"steps"' in messages[0]["content"]:
            steps = ["Fix the first vertex by symmetry.", "Classify the second vertex by its distance."]
            return json.dumps({"steps": steps + (["Count the third vertices on a common face and average."]
                                                 if retried else [])})
        concept = "Classify Q by its distance class from P." if retried else "The probability is 37/64."
        return json.dumps({"essential_property": "Face membership depends only on distances.",
                           "solution_principle": "Condition on the distance of Q from P.", "core_concept": concept})

    with LoopbackServer(script=teacher) as server:
        result = runner.invoke(app, ["prim", "compile", "--teacher", TEACHER, "--kind", "teacher", "--json",
                                     "--base-url", server.openai_base_url, "--store", str(store)])
        assert result.exit_code == 0, result.output  # no reference solution yet: skipped, no call
        assert json.loads(result.stdout.strip().splitlines()[-1])["failed_why"] == {
            B: "prim_solution: no reference solution (`ladder prim import` one) for a curation primitive"}
        gold = next(x for x in (release_data / "prim_gold.jsonl").read_text().splitlines() if B in x)
        (tmp_path / "gold.jsonl").write_text(gold + "\n")
        assert runner.invoke(app, ["prim", "import", str(tmp_path / "gold.jsonl"), "--store", str(store)]).exit_code == 0
        for kind in ("teacher", "teacher-problem-only", "plan"):
            result = runner.invoke(app, ["prim", "compile", "--teacher", TEACHER, "--kind", kind, "--json",
                                         "--base-url", server.openai_base_url, "--store", str(store)])
            assert result.exit_code == 0, result.output
            summary = json.loads(result.stdout.strip().splitlines()[-1])
            assert (summary["compiled"], summary["failed_why"]) == (1, {})

    async def read():
        async with Store.open(store) as s:
            return (await s.primitives(), await s.plans(), await s.primitive_attempts(B))
    primitives, plans, attempts = asyncio.run(read())
    assert [(p.provenance, p.author, p.core_concept, p.family) for p in primitives] == [
        ("gold", "", json.loads(gold)["core_concept"], "RECAST"),
        ("teacher", TEACHER, "Fix P and classify Q by distance.", "RECAST"),
        ("teacher-problem-only", TEACHER, "Classify Q by its distance class from P.", None)]
    assert plans == {B: ["Fix the first vertex by symmetry.", "Classify the second vertex by its distance.",
                         "Count the third vertices on a common face and average."]}
    got = [(a.teacher, a.attempt, a.passed, [e["check"] for e in a.errors]) for a in attempts]
    # (the skip without a solution was attempt 0 too; the rerun's attempt 0 replaced it)
    assert got == [(f"prim-teacher:{TEACHER}", 0, False, ["prim_types"]), (f"prim-teacher:{TEACHER}", 1, True, []),
                   (f"prim-teacher-problem-only:{TEACHER}", 0, False, ["primitive_leak"]),
                   (f"prim-teacher-problem-only:{TEACHER}", 1, True, []),
                   (f"prim-plan:{TEACHER}", 0, False, ["prim_shape"]), (f"prim-plan:{TEACHER}", 1, True, [])]

    shown: list[str] = []

    def student(messages: list[dict], body: dict) -> str:
        shown.append(messages[-1]["content"])
        return "\\boxed{\\frac{37}{64}}"

    probe = ["prim", "probe", "--student", "openai/s", "--dimensions", "execution", "--primitive-source", "plan",
             "--primitive-source", "teacher-problem-only", "--store", str(store), "--json"]
    with LoopbackServer(script=student) as server:
        estimate = runner.invoke(app, [*probe, "--base-url", server.openai_base_url, "--dry-run"])
        assert estimate.exit_code == 0, estimate.output
        assert (json.loads(estimate.stdout)["calls"], json.loads(estimate.stdout)["jobs"], shown) == (2, 2, [])
        result = runner.invoke(app, [*probe, "--base-url", server.openai_base_url])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout.strip().splitlines()[-1])["rollouts"] == 2
        estimate = runner.invoke(app, [*probe, "--base-url", server.openai_base_url, "--dry-run"])
        assert json.loads(estimate.stdout)["calls"] == 0  # every answer is in the cache now
    plan_prompt = next(s for s in shown if "a plan of the solution" in s)
    assert "1. Fix the first vertex by symmetry.\n2. Classify" in plan_prompt
    assert any("core_concept: Classify Q by its distance class from P." in s for s in shown)
