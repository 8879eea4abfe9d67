"""`compile --teacher-prompt paper|toolkit` (issue 35, item 2): the paper's teacher prompt is Appendix U's
text as published (tests/data/appendix_u.txt, the paper's appendix copied whole, CC BY 4.0), with no added
section; its name and hash go in each family's provenance, the report header and `compare`."""
from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.prompts import load
from oracleladder.testing import LoopbackServer

DATA = Path(__file__).parents[2] / "data"
runner = CliRunner()
M0 = "Compute the product of 73 and 127. Output the product."
M1 = "Compute the sum of 4019 and 4442. Output the sum."
GOLD = {M0: "9271", M1: "8461"}
POOL = [{"id": "a", "problem": "Find the number of primes below 100.", "answer": "25"},
        {"id": "b", "problem": "Find the sum of the first 20 odd numbers.", "answer": "400"}]


def published() -> str:
    """The prompt Appendix U quotes, between its opening and closing quotation marks."""
    appendix = (DATA / "appendix_u.txt").read_text(encoding="utf-8")
    return appendix[appendix.index("\u201c") + 1:appendix.index("\u201d")]


def _m(type_: str, description: str, gold: str) -> dict:
    return {"type": type_, "answer_schema": "NUMBER", "description": description, "canonical_answer": gold}


def _script(systems: dict[str, list[str]]):
    def answer(messages: list[dict], body: dict) -> str:
        if "Mathematics Mentor" in messages[0]["content"]:
            systems.setdefault(body["model"], []).append(messages[0]["content"])
            parent = next(r["answer"] for r in POOL if r["problem"] in messages[1]["content"])
            return json.dumps({"milestones": [_m("COMPUTE", M0, GOLD[M0]), _m("COMPUTE", M1, GOLD[M1]),
                                              _m("INTEGRATE", "Combine the results.", parent)]})
        solved = [g for d, g in GOLD.items() if d in messages[-1]["content"]]
        return f"\\boxed{{{solved[0] if solved else 0}}}"  # the teacher's independent solve, or the student
    return answer


def _run(args: list[str], code: int = 0) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    return result.output


def test_the_paper_prompt_file_is_appendix_u_as_published() -> None:
    assert load("teacher_math_paper").text.strip() == published().strip()
    for added in ("ANSWER FORMAT", "NO-LEAK", "PRIMITIVE", "{granularity}"):
        assert added not in published()


def test_paper_and_toolkit_prompts_are_sent_recorded_and_told_apart(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in POOL), encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    systems: dict[str, list[str]] = {}
    with LoopbackServer(script=_script(systems)) as server:
        url = ["--base-url", server.openai_base_url, "--store", store]
        _run(["compile", str(pool), "--teacher", "openai/paper", "--teacher-prompt", "paper", *url])
        _run(["compile", str(pool), "--teacher", "openai/toolkit", *url])  # the default
        # a teacher's set keeps one prompt: the other's would replace its families one by one
        mixed = _run(["compile", str(pool), "--teacher", "openai/paper", *url], 2)
        assert "compiled with the paper teacher prompt" in mixed and len(mixed.strip().splitlines()) == 1
        for source in ("openai/paper", "openai/toolkit"):
            _run(["probe", "--student", "openai/student", "--source", source, "--k", "1", *url])
    # the request the server received is the published wording, nothing added
    assert [s.strip() for s in systems["paper"]] == [published().strip()] * 2
    assert all(s == systems["toolkit"][0] and "NO-LEAK RULE" in s for s in systems["toolkit"])

    exported = tmp_path / "paper"
    _run(["report", "--student", "openai/student", "--source", "openai/paper", "--out", str(exported),
          "--store", store])
    header = (exported / "report.md").read_text()
    version = "-".join(load(n).version for n in ("teacher_math_paper", "teacher_user"))
    assert f"Teacher prompt: paper ({version})." in header
    assert json.loads((exported / "report.json").read_text())["meta"]["teacher_prompts"] == [f"paper ({version})"]

    out = tmp_path / "compare"
    said = _run(["compare", "--a", "openai/paper", "--b", "openai/toolkit", "--student", "openai/student",
                 "--out", str(out), "--store", store])
    assert "warning: the two sets were compiled with different teacher prompts" in " ".join(said.split())
    compared = json.loads((out / "compare.json").read_text())
    assert compared["teacher_prompts"]["openai/paper"] == [f"paper ({version})"]
    assert re.fullmatch(r"toolkit \([0-9a-f-]+\)", compared["teacher_prompts"]["openai/toolkit"][0])
    assert "**Warning:** the two sets were compiled with different teacher prompts" in (out / "compare.md").read_text()
    # one set against itself: the same prompt, no warning
    same = _run(["compare", "--a", "openai/paper", "--b", "openai/paper", "--student", "openai/student",
                 "--out", str(tmp_path / "same"), "--store", store])
    assert "teacher prompts" not in same


def test_the_paper_prompt_is_math_at_the_default_granularity(tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")
    with LoopbackServer(script=_script({})) as server:
        url = ["--base-url", server.openai_base_url, "--store", store]
        code = _run(["compile", "humaneval:1", "--domain", "code", "--teacher", "openai/t", "--teacher-prompt",
                     "paper", *url], 2)
        assert "the paper publishes no code teacher prompt" in code and len(code.strip().splitlines()) == 1
        pool = tmp_path / "pool.jsonl"
        pool.write_text(json.dumps(POOL[0]) + "\n", encoding="utf-8")
        fine = _run(["compile", str(pool), "--teacher", "openai/t", "--teacher-prompt", "paper", "--granularity",
                     "fine", *url], 2)
        assert "no granularity section" in fine
        assert server.total == 0
