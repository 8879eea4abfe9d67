"""The raw screen (issue 35, item 1): a pool screened by the anchor before any teacher call, as Appendix N
and the code pilot did it. On two loopback servers, an anchor scripted to solve some problems and a
teacher that counts the requests it gets per problem: the solved ones never reach the teacher, the funnel
lists each dropped problem with its stage, and `compile --set` compiles the rest."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.code.problems import load_humaneval
from oracleladder.testing import LoopbackServer, Refuse

from ..domains.code.test_compile import GOOD

runner = CliRunner()
M0 = "Compute the product of 73 and 127. Output the product."
M1 = "Compute the sum of 4019 and 4442. Output the sum."
GOLD = {M0: "9271", M1: "8461"}
# pid -> (problem, answer, what the anchor does): solve it, fail it, or refuse the call
POOL = {
    "easy-1": ("What is 2 + 3?", "5", "solve"),
    "easy-2": ("What is 6 times 7?", "42", "solve"),
    "hard-1": ("Find the number of primes below 100.", "25", "fail"),
    "hard-2": ("Find the sum of the first 20 odd numbers.", "400", "fail"),
    "hard-3": ("How many subsets does a 10-element set have?", "1024", "fail"),
    "refused": ("What is the 10th Fibonacci number?", "55", "refuse"),
    "blank": ("What is the answer to this problem?", "", "fail"),
}


def _m(type_: str, description: str, gold: str, schema: str = "NUMBER") -> dict:
    return {"type": type_, "answer_schema": schema, "description": description, "canonical_answer": gold}


def _which(text: str) -> str:
    return next(pid for pid, (problem, _, _) in POOL.items() if problem in text)


def _anchor(messages: list[dict], body: dict) -> str:
    pid = _which(messages[-1]["content"])
    _, answer, does = POOL[pid]
    if does == "refuse":
        raise Refuse(400, "this prompt is refused")
    return f"\\boxed{{{answer}}}" if does == "solve" else "\\boxed{0}"


def _teacher(asked: Counter[str]):
    def answer(messages: list[dict], body: dict) -> str:
        if "Mathematics Mentor" in messages[0]["content"]:
            pid = _which(messages[1]["content"])
            asked[pid] += 1
            return json.dumps({"milestones": [_m("COMPUTE", M0, GOLD[M0]), _m("COMPUTE", M1, GOLD[M1]),
                                              _m("INTEGRATE", "Combine the results.", POOL[pid][1])]})
        return f"\\boxed{{{next(g for d, g in GOLD.items() if d in messages[-1]['content'])}}}"  # independent solve
    return answer


def _run(args: list[str], code: int = 0) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    return result.output


def _json(args: list[str], code: int = 0) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_a_raw_math_pool_is_screened_before_the_teacher_is_paid(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": pid, "problem": p, "answer": a}) + "\n"
                            for pid, (p, a, _) in POOL.items()), encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    asked: Counter[str] = Counter()
    with LoopbackServer(script=_anchor) as anchor, LoopbackServer(script=_teacher(asked)) as teacher:
        screen = ["screen", str(pool), "--anchor", "openai/anchor", "--rule", "direct-only", "--k", "4",
                  "--set", "n", "--json", "--base-url", anchor.openai_base_url, "--store", store]
        # the refused call leaves its problem unscreened: the screen is incomplete (exit 3)
        screened = _json(screen, 3)
        assert screened["verdicts"] == {"solved_directly": 2, "kept": 3, "incomplete": 1, "reference_answer": 1}
        assert anchor.total == 6 * 4  # the blank reference answer is never asked
        # a rerun asks only the refused calls again
        before = anchor.total
        said = " ".join(_run([a for a in screen if a != "--json"], 3).split())
        assert anchor.total - before == 4
        assert ("set 'n' (raw math pool): kept 3 of 7 for compile; unusable reference answer 1, solved directly 2, "
                "unscreened 1;") in said
        assert "pid refused target C1_direct" in said

        compiled = _json(["compile", str(pool), "--teacher", "openai/teacher", "--set", "n", "--json",
                                    "--base-url", teacher.openai_base_url, "--store", store])
        # the raw screen's direct attempts are the compiled families' C1 calls: a screen of the compiled set
        # at the same settings asks only the milestones (3 families, 2 tested milestones, K = 4)
        before = anchor.total
        _run(["screen", "--anchor", "openai/anchor", "--source", "openai/teacher", "--rule", "direct-only", "--k",
              "4", "--set", "m", "--base-url", anchor.openai_base_url, "--store", store])
        assert anchor.total - before == 3 * 2 * 4
    assert compiled["compiled"] == 3
    # the teacher never saw a problem the anchor solved, left unscreened or could not grade
    assert set(asked) == {"hard-1", "hard-2", "hard-3"}

    funnel = _json(["funnel", "--set", "n", "--source", "openai/teacher", "--json", "--store", store])
    assert {k: funnel[k] for k in ("candidates", "valid_reference", "passed_raw_screen", "compiled", "final")} == {
        "candidates": 7, "valid_reference": 6, "passed_raw_screen": 3, "compiled": 3, "final": 3}
    assert funnel["raw_screen_failures"] == {"solved_directly": 2, "incomplete": 1}
    dropped = {d["pid"]: (d["stage"], d["cause"]) for d in funnel["dropped"]}
    assert dropped == {"easy-1": ("raw screen", "solved_directly"), "easy-2": ("raw screen", "solved_directly"),
                       "refused": ("raw screen", "incomplete"), "blank": ("reference answer", "reference_answer")}
    refused = _run(["export", "--set", "n", "--out", str(tmp_path / "n.jsonl"), "--store", store], 2)
    assert "a raw pool's screen, before any compile" in refused
    # before any compile, the survivors wait for it
    waiting = _json(["funnel", "--set", "n", "--json", "--store", store])
    assert (waiting["compiled"], waiting["final"]) == (0, 0)
    assert {d["cause"] for d in waiting["dropped"] if d["pid"].startswith("hard")} == {"not_compiled"}


def test_the_default_rule_needs_roadmaps(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "a", "problem": "What is 2 + 3?", "answer": "5"}) + "\n", encoding="utf-8")
    with LoopbackServer(script=_anchor) as anchor:
        out = _run(["screen", str(pool), "--anchor", "openai/anchor", "--base-url", anchor.openai_base_url,
                    "--store", str(tmp_path / "s.sqlite")], 2)
        assert anchor.total == 0
    assert "needs roadmaps" in out and len(out.strip().splitlines()) == 1


def test_compile_set_refuses_a_set_that_is_not_a_raw_screen_of_its_domain(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "hard-1", "problem": POOL["hard-1"][0], "answer": "25"}) + "\n",
                    encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    with LoopbackServer(script=_anchor) as anchor:
        _run(["screen", str(pool), "--anchor", "openai/anchor", "--rule", "direct-only", "--k", "1", "--set", "n",
              "--base-url", anchor.openai_base_url, "--store", store])
        out = _run(["compile", "humaneval:1", "--domain", "code", "--teacher", "openai/teacher", "--set", "n",
                    "--base-url", anchor.openai_base_url, "--store", store], 2)
        assert "not of a raw code pool" in out


def _code_anchor(messages: list[dict], body: dict) -> str:
    """Writes HumanEval/1 and /2's canonical solutions, and a wrong HumanEval/0."""
    prompt = messages[-1]["content"]
    if "has_close_elements" in prompt:
        return "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"
    solved = next(p for p in load_humaneval(limit=3) if p.statement.strip() in prompt)
    return f"```python\n{solved.reference}\n```"


@pytest.mark.timeout(180)
def test_a_raw_code_pool_is_screened_in_the_sandbox_before_the_teacher_is_paid(tmp_path: Path) -> None:
    store = str(tmp_path / "code.sqlite")
    asked: Counter[str] = Counter()

    def teacher(messages: list[dict], body: dict) -> str:
        asked[messages[1]["content"].split("Entry-point function: ")[1].split()[0]] += 1
        return json.dumps(GOOD)

    with LoopbackServer(script=_code_anchor) as anchor, LoopbackServer(script=teacher) as teacher_server:
        screened = _json(["screen", "humaneval:3", "--domain", "code", "--anchor", "openai/anchor",
                                    "--rule", "direct-only", "--k", "2", "--set", "pilot", "--json",
                                    "--base-url", anchor.openai_base_url, "--store", store])
        assert screened["verdicts"] == {"kept": 1, "solved_directly": 2}
        compiled = _json(["compile", "humaneval:3", "--domain", "code", "--teacher", "openai/teacher",
                                    "--set", "pilot", "--json", "--base-url", teacher_server.openai_base_url,
                                    "--store", store])
    assert compiled["compiled"] == 1
    assert asked == Counter({"has_close_elements": 1})
    funnel = _json(["funnel", "--set", "pilot", "--source", "openai/teacher", "--json", "--store", store])
    assert (funnel["candidates"], funnel["passed_raw_screen"], funnel["compiled"], funnel["final"]) == (3, 1, 1, 1)
    assert {d["pid"]: d["stage"] for d in funnel["dropped"]} == {"HumanEval/1": "raw screen",
                                                                 "HumanEval/2": "raw screen"}


# a LiveCodeBench-style stdin/stdout pool (our field names): sum two numbers, and reverse a word
STDIO = [{"pid": "sum", "statement": "Read two integers a and b on one line; print a + b.",
          "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "-5 5\n", "output": "0\n"}]},
         {"pid": "rev", "statement": "Read a word; print it reversed.",
          "tests": [{"input": "abc\n", "output": "cba\n"}, {"input": "x\n", "output": "x\n"}]}]


def _stdio_anchor(messages: list[dict], body: dict) -> str:
    """A right program for the sum, and one that prints the word unchanged (it passes the second test only)."""
    if "a + b" in messages[-1]["content"]:
        return "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    return "```python\nprint(input())\n```"


@pytest.mark.timeout(180)
def test_a_stdin_stdout_pool_is_screened_by_running_its_tests(tmp_path: Path) -> None:
    pool = tmp_path / "lcb.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in STDIO), encoding="utf-8")
    store = str(tmp_path / "code.sqlite")
    with LoopbackServer(script=_stdio_anchor) as anchor:
        screened = _json(["screen", str(pool), "--domain", "code", "--anchor", "openai/anchor", "--rule",
                          "direct-only", "--k", "2", "--set", "lcb", "--json", "--base-url", anchor.openai_base_url,
                          "--store", store])
    assert screened["verdicts"] == {"solved_directly": 1, "kept": 1}
    funnel = _json(["funnel", "--set", "lcb", "--json", "--store", store])
    assert {d["pid"]: (d["stage"], d["cause"]) for d in funnel["dropped"]} == {
        "sum": ("raw screen", "solved_directly"), "rev": ("compile", "not_compiled")}
