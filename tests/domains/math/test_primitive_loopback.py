"""The primitive rung end to end through the CLI, a scripted teacher and a scripted student on the
loopback server: one family the student solves with the primitive alone, one only with the roadmap,
one with neither. Outcomes and labels equal the hand-derived ones at tau 1 and 3, the control shows
only other families' primitives, and the specificity contrast and `compare --primitive` count right."""

from __future__ import annotations

import asyncio
import collections
import json
import re
import threading
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math import collect_results
from oracleladder.ladder.outcomes import Gap, Outcome
from oracleladder.report.report import known_gap, known_outcome
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.helpers.roots import milestone

K = 3
TEACHER, STUDENT = "openai/teacher", "openai/student"
WRONG = "I think it is \\boxed{999999}."


def _plan(equation: str, factored: str, roots: str, answer: str, what: str, primitive: str) -> dict:
    return {"milestones": [
        milestone("KEY_MOVE", "EQUATION", f"Factor the left side of {equation}. Output the factored equation.",
                  factored),
        milestone("COMPUTE", "SET", f"Solve the equation {factored} for real x. Output the solution set.", roots),
        milestone("INTEGRATE", "NUMBER", f"Give the {what} of the real roots of {equation}.", answer),
    ], "primitive": primitive}


# pid -> (equation the prompts carry, problem, answer, the teacher's plan)
PROBLEMS = {
    "prim": ("x^2-5x+6=0", "Find the sum of the real roots of $x^2-5x+6=0$.", "5",
             _plan("x^2-5x+6=0", "(x-2)(x-3)=0", "\\{2,3\\}", "5", "sum",
                   "Factor the quadratic into two linear factors and read the roots off the factors.")),
    "road": ("x^2-7x+12=0", "Find the product of the real roots of $x^2-7x+12=0$.", "12",
             _plan("x^2-7x+12=0", "(x-3)(x-4)=0", "\\{3,4\\}", "12", "product",
                   "Relate the roots to the coefficients of the quadratic through Vieta's formulas.")),
    "none": ("x^2-13x+42=0", "Find the smaller real root of $x^2-13x+42=0$.", "6",
             _plan("x^2-13x+42=0", "(x-6)(x-7)=0", "\\{6,7\\}", "6", "smaller",
                   "Split the middle coefficient into two numbers whose product is the constant term.")),
}
PRIMITIVES = {pid: p[3]["primitive"] for pid, p in PROBLEMS.items()}
# how many of K attempts are right, per family and prompt kind (everything else is wrong)
RIGHT = {
    "prim": {"stage0": K, "C2_primitive": K, "C2": K, "C3": K},
    "road": {"stage0": K, "C2": 2, "C3": K},
    "none": {},
}
# hand-derived: (outcome, five-way label) per family, at tau 1 and tau 3
EXPECTED = {
    1: {"prim": (Outcome.PRIMITIVE_NEEDED, Gap.PRIMITIVE), "road": (Outcome.ROADMAP_NEEDED, Gap.ROADMAP),
        "none": (Outcome.UNRECOVERED, Gap.CAPABILITY)},
    3: {"prim": (Outcome.PRIMITIVE_NEEDED, Gap.PRIMITIVE), "road": (Outcome.ANSWERS_NEEDED, Gap.MS_EXEC),
        "none": (Outcome.UNRECOVERED, Gap.CAPABILITY)},
}


def _pid(text: str) -> str:
    return next(pid for pid, p in PROBLEMS.items() if f"Problem:\n{p[1]}" in text or f"context):\n{p[1]}" in text)


def _kind(user: str) -> str:
    """What the student is shown: Stage 0, or which parent condition."""
    if "Milestone:" in user:
        return "stage0"
    if "the key idea of the solution" in user:
        shown = next(pid for pid, text in PRIMITIVES.items() if text in user)
        return "C2_primitive" if shown == _pid(user) else f"C2_primitive_random:{shown}"
    if "Answer:" in user:  # C3, or C3-mismatched (other families' golds)
        return "C3" if f"Answer: {PROBLEMS[_pid(user)][3]['milestones'][0]['canonical_answer']}" in user else "C3x"
    if "Sub-goal" in user:
        return "C2" if PROBLEMS[_pid(user)][0] in user.split("Hint", 1)[1] else "C2-random"
    return "other"  # C1, C2-generic


def test_primitive_rung_end_to_end(tmp_path: Path) -> None:
    store, pool = tmp_path / "s.sqlite", tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"pid": pid, "problem": p[1], "answer": p[2]}) + "\n"
                            for pid, p in PROBLEMS.items()))
    seen: collections.Counter[str] = collections.Counter()
    shown: collections.defaultdict[str, set[str]] = collections.defaultdict(set)
    lock = threading.Lock()

    def script(messages: list[dict], body: dict) -> str:
        if "Mathematics Mentor" in messages[0]["content"]:  # the teacher
            return json.dumps(PROBLEMS[_pid(messages[-1]["content"])][3])
        user = messages[-1]["content"]
        pid, kind = _pid(user), _kind(user)
        with lock:
            i = seen[user]
            seen[user] += 1
            shown[pid].add(kind)
        if i >= RIGHT[pid].get(kind, 0):
            return WRONG
        if kind == "stage0":
            asked = re.search(r"Milestone:\n(.*?)\n\nOutput", user, re.S).group(1)
            return next(f"\\boxed{{{m['canonical_answer']}}}" for m in PROBLEMS[pid][3]["milestones"]
                        if m["description"] == asked)
        return f"So \\boxed{{{PROBLEMS[pid][2]}}}."

    runner = CliRunner()
    with LoopbackServer(script=script) as server:
        url = server.openai_base_url
        result = runner.invoke(app, ["compile", str(pool), "--teacher", TEACHER, "--base-url", url,
                                     "--no-independent-solve", "--store", str(store)])
        assert result.exit_code == 0, result.output
        result = runner.invoke(app, ["probe", "--student", STUDENT, "--base-url", url, "--source", TEACHER,
                                     "--k", str(K), "--primitive", "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output.strip().splitlines()[-1])["without_primitive"] == 0

    # the control shows another family's primitive, never the family's own
    for pid, kinds in shown.items():
        controls = [k for k in kinds if k.startswith("C2_primitive_random:")]
        assert len(controls) == 1 and controls[0] != f"C2_primitive_random:{pid}", (pid, kinds)
        assert "C2_primitive" in kinds

    async def load():
        s = await Store.open(store)
        try:
            return await s.families(TEACHER), await s.rollouts(student=STUDENT)
        finally:
            await s.close()

    families, rollouts = asyncio.run(load())
    assert {f.pid: f.primitive.provenance for f in families} == dict.fromkeys(PROBLEMS, "teacher")
    results = {r.pid: r for r in collect_results(families, rollouts)}
    for tau, expected in EXPECTED.items():
        for pid, (outcome, label) in expected.items():
            assert (known_outcome(results[pid], tau), known_gap(results[pid], tau)) == (outcome, label), (tau, pid)

    for tau, expected in EXPECTED.items():
        out = tmp_path / f"report{tau}"
        result = runner.invoke(app, ["report", "--student", STUDENT, "--source", TEACHER, "--threshold", str(tau),
                                     "--out", str(out), "--store", str(store), "--html"])
        assert result.exit_code == 0, result.output
        pages = "".join(p.read_text() for p in (out / "html" / "data").rglob("*.js"))
        assert '"C2_primitive": "C2-primitive"' in pages and "C2-primitive 3 of 3" in pages  # the HTML shows the rung
        r = json.loads((out / "report.json").read_text())["students"][STUDENT]
        assert r["primitive_run"]
        assert r["outcomes"] == {o.value: sum(e[0] is o for e in expected.values()) for o in Outcome}
        assert r["taxonomy"] == {g.value: sum(e[1] is g for e in expected.values()) for g in Gap}
        specificity = next(c for c in r["contrasts"] if c["contrast"] == "C2-primitive vs C2-primitive-random")
        assert (specificity["n"], specificity["only_a"], specificity["only_b"]) == (3, 1, 0)
        assert r["conditions"]["C2_primitive"]["solved"] == 1 and r["conditions"]["C2_primitive_random"]["solved"] == 0
        table = r["format"]["table"]  # the format audit counts the rung's answers too
        assert table["C2_primitive"]["n"] == table["C2_primitive_random"]["n"] == 3 * K
        md = (out / "report.md").read_text()
        assert "| Model | Direct | Primitive-gap | Roadmap-gap |" in md  # Table 16
        assert "C2-primitive vs C2-primitive-random" in md and "Primitive-Needed" in md

    out = tmp_path / "cmp"
    result = runner.invoke(app, ["compare", "--primitive", "--a", TEACHER, "--student", STUDENT, "--out", str(out),
                                 "--store", str(store)])
    assert result.exit_code == 0, result.output
    cmp = json.loads((out / "primitive_vs_roadmap.json").read_text())
    assert (cmp["n"], cmp["both"], cmp["primitive_only"], cmp["roadmap_only"], cmp["neither"]) == (3, 1, 0, 1, 1)
    assert cmp["mcnemar"]["only_a"] == 0 and cmp["mcnemar"]["only_b"] == 1
