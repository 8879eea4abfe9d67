"""`ladder prim probe --use-corrections` (issue 47, item 4): Generation and Execution graded against the
corrected reference answers, as a ladder probe's, and the answer judge of such a run shown the corrected
answer. Two released families, each given a corrected answer (a corrections file as the release ships
it); the student answers family A's corrected value and something else for B. Counted by hand: without
corrections Generation is 0 of 2; with them 1 of 2 (A), and B's rejected answer goes to the answer judge
with B's corrected answer as the correct one."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer
from tests.prim.scripted import STUDENT, A, B

JUDGE = "openai/judge"
CORRECTED = {A: "123456", B: "777"}


def _store(tmp_path: Path, release_data: Path, name: str) -> Path:
    families = {f["pid"]: f for line in (release_data / "families_sample.jsonl").read_text().splitlines()
                if (f := json.loads(line))["pid"] in CORRECTED}
    fams, fixes, store = tmp_path / "families.jsonl", tmp_path / "corrections.jsonl", tmp_path / f"{name}.sqlite"
    fams.write_text("".join(json.dumps(f) + "\n" for f in families.values()))
    fixes.write_text("".join(json.dumps({"pid": pid, "field": "parent_answer", "original": families[pid]["parent_answer"],
                                         "corrected": answer, "evidence": "by hand"}) + "\n"
                             for pid, answer in CORRECTED.items()))
    for args in (["import", str(fams), "--corrections", str(fixes)], ["prim", "import", str(release_data / "prim_gold.jsonl")]):
        result = CliRunner().invoke(app, [*args, "--store", str(store)])
        assert result.exit_code == 0, result.output
    return store


def _student(messages: list[dict], body: dict) -> str:
    return f"So \\boxed{{{CORRECTED[A]}}}." if "geometric sequence" in messages[-1]["content"] else "So \\boxed{0}."


def _generation(store: Path, out: Path) -> dict:
    result = CliRunner().invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                      "--store", str(store)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())["table1"]["dimensions"]["generation"]


def test_use_corrections_grades_generation_against_the_corrected_answers(tmp_path: Path, release_data: Path) -> None:
    plain, corrected = _store(tmp_path, release_data, "plain"), _store(tmp_path, release_data, "corrected")
    asked: list[str] = []

    def judge(messages: list[dict], body: dict) -> str:
        asked.append(messages[0]["content"])
        return '{"extracted_final_answer": "0", "correct": "no", "reasoning": "differs"}'

    with LoopbackServer(script=_student) as server:
        for store, flag in ((plain, []), (corrected, ["--use-corrections"])):
            result = CliRunner().invoke(app, ["prim", "probe", "--student", STUDENT, "--dimensions", "generation",
                                              *flag, "--base-url", server.openai_base_url, "--store", str(store)])
            assert result.exit_code == 0, result.output
    assert _generation(plain, tmp_path / "plain")["interval"]["point"] == 0.0
    at = _generation(corrected, tmp_path / "corrected")
    assert (at["n"], at["interval"]["point"]) == (2, 0.5)
    assert "use_corrections = True" in json.loads((tmp_path / "corrected" / "report.json").read_text())["settings"]
    with LoopbackServer(script=judge) as server:
        result = CliRunner().invoke(app, ["prim", "answers", "--judge", JUDGE, "--student", STUDENT, "--json",
                                          "--base-url", server.openai_base_url, "--store", str(corrected)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["judged"] == 1  # B's answer alone was rejected
    [prompt] = asked
    assert f"## Correct answer:\n{CORRECTED[B]}" in prompt
