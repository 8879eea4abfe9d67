"""PRIM's benchmark side (issue 47, item 4; PRIM Table 4): a plain benchmark's free-form answers read by the
answer judge `ladder prim answers` has (`ladder prim benchmark-answers`), and the benchmarks side by side,
each at its pass@k, with their average (`ladder prim benchmarks`). Through the loopback server, K = 2:

- alpha: p1 (7) answered 7, accepted; p2 (\\frac{1}{2}) answered "one half", which the grader rejects and
  the judge reads correct;
- beta: q1 (12) answered 12; q2 (5) answered 6, rejected by both.

By hand: alpha's pass@1 is 1/2 by the grader, 1 with the judge (its 2 answers to p2); beta's pass@1 and
pass@2 are 1/2 (q1 right, q2 wrong); scored alpha at pass@1 and beta at pass@2, the average is
(1 + 1/2) / 2 = 0.75 with the judge and (1/2 + 1/2) / 2 = 0.5 without."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer

STUDENT, JUDGE = "openai/student", "openai/judge"
POOLS = {"alpha": [("p1", "What is 3 + 4?", "7", "7"), ("p2", "What fraction of 8 is 4?", "\\frac{1}{2}", "one half")],
         "beta": [("q1", "What is 3 * 4?", "12", "12"), ("q2", "What is 10 / 2?", "5", "6")]}
SAID = {problem: said for rows in POOLS.values() for _, problem, _, said in rows}


def _cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def _student(messages: list[dict], body: dict) -> str:
    return next(f"So the answer is \\boxed{{{said}}}." for problem, said in SAID.items()
                if problem in messages[-1]["content"])


def _judge(messages: list[dict], body: dict) -> str:
    response = messages[0]["content"].split("## Response:", 1)[1].split("## Correct answer:", 1)[0]
    return json.dumps({"extracted_final_answer": "x", "correct": "yes" if "one half" in response else "no",
                       "reasoning": "compared"})


def test_free_form_answers_judged_and_the_benchmarks_averaged(tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    with LoopbackServer(script=_student) as server:
        for name, rows in POOLS.items():
            pool = tmp_path / f"{name}.jsonl"
            pool.write_text("".join(json.dumps({"pid": pid, "problem": problem, "answer": answer}) + "\n"
                                    for pid, problem, answer, _ in rows))
            _cli("benchmark", str(pool), "--student", STUDENT, "--k", "2", "--base-url", server.openai_base_url,
                 "--store", store)
    with LoopbackServer(script=_judge) as server:
        judged = {name: json.loads(_cli("prim", "benchmark-answers", "--judge", JUDGE, "--student", STUDENT, "--name",
                                        name, "--json", "--base-url", server.openai_base_url,
                                        "--store", store).splitlines()[-1]) for name in POOLS}
    assert {n: (j["judged"], j["correct"], j["missing"]) for n, j in judged.items()} == {
        "alpha": (2, 2, 0), "beta": (2, 0, 0)}

    def table(*extra: str) -> dict:
        return json.loads(_cli("prim", "benchmarks", "--student", STUDENT, "--name", "alpha,beta", "--pass-at", "beta=2",
                               "--json", "--store", store, *extra))

    plain, with_judge = table(), table("--answer-judge", JUDGE)
    assert [(r["name"], r["k"], r["complete"], r["pass_at_1"], r["at"], r["score"], r["judged"])
            for r in with_judge["rows"]] == [("alpha", 2, 2, 1.0, 1, 1.0, 2), ("beta", 2, 2, 0.5, 2, 0.5, 0)]
    assert (with_judge["average"], plain["average"]) == (0.75, 0.5)
    assert [r["score"] for r in plain["rows"]] == [0.5, 0.5]
    md = _cli("prim", "benchmarks", "--student", STUDENT, "--name", "alpha", "--name", "beta", "--pass-at", "beta=2",
              "--answer-judge", JUDGE, "--store", store)
    assert "| alpha | 2 | 2 | 100.00 | 100.00 (pass@1) | 2 |" in md and "| Avg. |  |  |  | 75.00 |  |" in md
    said = _cli("prim", "benchmarks", "--student", STUDENT, "--name", "alpha", "--pass-at", "alpha=3", "--store", store,
                code=2)
    assert "pass@3 of benchmark 'alpha' needs 3 answers per problem; it has 2" in said
