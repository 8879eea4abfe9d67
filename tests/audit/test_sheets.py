"""Every audit's filled-in sheet is read by one reader (schemas.sheets), through the CLI's `--read`: the
toolkit's own sheet of a family whose problem is 150 KB (a cell past the csv module's default limit of
131,072 characters) reads; a sheet Excel saved as "CSV UTF-8" (a byte-order mark before the header)
reads as the same sheet without one; a latin-1 sheet, a key file of the wrong shape and a bad row are
each one line naming the file (and the row)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.audit import human as hum, judge as jdg, retest as rt
from oracleladder.cli import app
from oracleladder.domains.math import MathDomain
from oracleladder.prim import audit as prim_audit
from oracleladder.schemas import Family, Verdict
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.models import Rollout
from oracleladder.schemas.prim import PrimPrimitive
from oracleladder.schemas.sheets import key_path
from oracleladder.schemas.types import Label
from oracleladder.store import PrimScore
from oracleladder.validators import reference_answer_problem

STUDENT = "openai/student-x"
LONG = 150_000  # characters of the long problem: past csv's default field limit (131,072)
CSV_LIMIT = 131_072


@dataclass(frozen=True)
class Audit:
    """An audit's sheets as the toolkit writes them, how a person fills them and how `--read` is asked."""

    write: Callable[[Path, list[Family]], list[Path]]  # -> the sheets to fill
    key: Callable[[Path], Path]
    read: Callable[[Path], list[str]]  # the command line of `--read`
    label: str  # the column a person fills
    value: str  # what the person writes there
    ident: str  # the column naming the row's case


def _rollouts(families: list[Family]) -> list[Rollout]:
    """A rejected C1 attempt per family, k = 0 and 1."""
    return [Rollout(run_id="r1", student=STUDENT, pid=f.pid, target="C1_direct", k=k, call_key=f"{f.pid}-{k}",
                    response=f"so \\boxed{{-987654321}} ({f.pid}, {k})", verdict=Verdict(Label.NOT_ACCEPT, "not equivalent"))
            for f in families for k in (0, 1)]


def _human(folder: Path, families: list[Family]) -> list[Path]:
    hum.write_sheets(folder, families, _rollouts(families), raters=["a", "b"], validation=0, seed=0,
                     show_grader=False, meta={"student": STUDENT, "source": "release"})
    return [folder / "rater-a.csv", folder / "rater-b.csv"]


def _retest(folder: Path, families: list[Family]) -> list[Path]:
    folder.mkdir(parents=True)
    rt.write_sheet(folder / "retest.csv", MathDomain(), {f.pid: f for f in families}, _rollouts(families), seed=0,
                   meta={"student": STUDENT, "settings": "max_tokens=4096"})
    return [folder / "retest.csv"]


def _judge(folder: Path, families: list[Family]) -> list[Path]:
    folder.mkdir(parents=True)
    sample = _rollouts(families)
    sheet = folder / "judge.csv"
    jdg.write_sheet(sheet, key_path(sheet), MathDomain(), {f.pid: f for f in families}, {"not equivalent": 10},
                    sample, [("ACCEPT", "call")] * len(sample), {"judge": "openai/judge", "student": STUDENT}, seed=0)
    return [sheet]


def _prim(folder: Path, families: list[Family]) -> list[Path]:
    folder.mkdir(parents=True)
    scores = [PrimScore(student=STUDENT, source="release", pid=f.pid, target="prim_discovery", k=0, judge="openai/judge",
                        status="scored", validity=1, score=score, rollout_call=f"call-{f.pid}")
              for f, score in zip(families, (1.0, 0.0))]
    sheet = folder / "prim.csv"
    prim_audit.write_sheet(sheet, scores, problems={f.pid: f.parent_prompt for f in families}, solutions={},
                           golds={f.pid: PrimPrimitive(pid=f.pid, core_concept="gold", provenance="gold") for f in families},
                           written={s.rollout_call: {"core_concept": "mine"} for s in scores}, meta={}, tau=0.8)
    return [sheet]


AUDITS = {
    "human": Audit(_human, lambda sheet: sheet.parent / hum.KEY, lambda sheet: ["audit", "human", "--read", str(sheet.parent), "--json"],
                   "category", "Not_Standalone", "family"),
    "retest": Audit(_retest, key_path, lambda sheet: ["audit", "retest", "--read", str(sheet), "--json"], "correct", "yes",
                    "attempt"),
    "judge": Audit(_judge, key_path, lambda sheet: ["audit", "judge", "--read", str(sheet), "--json"], "label", "correct", "case"),
    "prim": Audit(_prim, key_path, lambda sheet: ["prim", "audit", "--read", str(sheet)], "label", "correct",
                  "case"),
}


@pytest.fixture(scope="module")
def families(release_data: Path) -> list[Family]:
    """Two released families, the first with a problem of 150 KB (no word break in its last 140 KB)."""
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if reference_answer_problem(f) is None][:2]
    long = fams[0].parent_prompt + " " + "x" * (LONG - len(fams[0].parent_prompt))
    return [fams[0].model_copy(update={"parent_prompt": long, "parent_answer": "7" * LONG}), fams[1]]


def _rows(sheet: Path) -> list[dict[str, str]]:
    limit = csv.field_size_limit(2**31 - 1)  # given back: the reader under test must raise its own
    try:
        return list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    finally:
        csv.field_size_limit(limit)


def _save(sheet: Path, rows: list[dict[str, str]], encoding: str = "utf-8") -> None:
    """The sheet as a spreadsheet saves it (Excel's "CSV UTF-8" is utf-8-sig; in cp1252, "?" for what it lacks)."""
    with sheet.open("w", newline="", encoding=encoding, errors="replace") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


def _filled(name: str, tmp_path: Path, families: list[Family], encoding: str = "utf-8",
            comment: str = "") -> tuple[Audit, Path]:
    """The audit's sheets written by the toolkit, every row labelled and saved in ``encoding``; the first sheet."""
    audit = AUDITS[name]
    sheets = audit.write(tmp_path / name, families)
    for sheet in sheets:
        _save(sheet, [{**row, audit.label: audit.value, "comment" if "comment" in row else "reason": comment}
                      for row in _rows(sheet)], encoding)
    return audit, sheets[0]


def _read(audit: Audit, sheet: Path):
    return CliRunner().invoke(app, audit.read(sheet))


def _one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    return result.output


@pytest.mark.parametrize("name", AUDITS)
def test_the_toolkits_own_sheet_with_a_cell_over_131072_characters_reads(name: str, tmp_path: Path,
                                                                        families: list[Family]) -> None:
    audit, sheet = _filled(name, tmp_path, families)
    assert max(len(cell) for row in _rows(sheet) for cell in row.values()) > CSV_LIMIT
    result = _read(audit, sheet)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", AUDITS)
def test_a_sheet_saved_by_excel_as_csv_utf8_reads_as_the_same_sheet(name: str, tmp_path: Path,
                                                                    families: list[Family]) -> None:
    audit, plain = _filled(name, tmp_path / "plain", families, comment="vu à l'œil")
    expected = _read(audit, plain)
    assert expected.exit_code == 0, expected.output
    audit, excel = _filled(name, tmp_path / "excel", families, encoding="utf-8-sig", comment="vu à l'œil")
    assert excel.read_bytes().startswith(b"\xef\xbb\xbf")
    result = _read(audit, excel)
    assert result.exit_code == 0, result.output
    assert result.output.replace(str(excel.parent), "") == expected.output.replace(str(plain.parent), "")


@pytest.mark.parametrize("name", AUDITS)
def test_a_latin1_sheet_is_refused_in_one_line_saying_how_to_save_it(name: str, tmp_path: Path,
                                                                     families: list[Family]) -> None:
    audit, sheet = _filled(name, tmp_path, families, encoding="cp1252", comment="vu à l'œil")
    said = _one_line(_read(audit, sheet))
    assert f"{sheet}: the sheet is not UTF-8 (byte 0x" in said and 'save it as "CSV UTF-8"' in said


@pytest.mark.parametrize("shape", ["[]", "{}", "not json", "missing", "wrong type"])
@pytest.mark.parametrize("name", AUDITS)
def test_a_key_file_of_the_wrong_shape_is_one_line_naming_it(name: str, shape: str, tmp_path: Path,
                                                             families: list[Family]) -> None:
    audit, sheet = _filled(name, tmp_path, families)
    key = audit.key(sheet)
    if shape == "missing":
        key.unlink()
    elif shape == "wrong type":  # a list where the key holds its families, cases or attempts by name
        data = json.loads(key.read_text())
        field = next(f for f in ("families", "cases", "attempts") if f in data)
        key.write_text(json.dumps({**data, field: 12}))
    else:
        key.write_text(shape)
    said = _one_line(_read(audit, sheet))
    assert said.startswith(f"error: {key}: "), said
    assert {"[]": "not this audit's key file (input should be an object)",
            "{}": "not this audit's key file (", "not json": "the key file is not JSON",
            "missing": "cannot read the key file (No such file or directory)",
            "wrong type": "not this audit's key file ("}[shape] in said


@pytest.mark.parametrize("name", AUDITS)
def test_a_row_of_another_audit_is_one_line_with_file_and_row(name: str, tmp_path: Path,
                                                               families: list[Family]) -> None:
    audit, sheet = _filled(name, tmp_path, families)
    rows = _rows(sheet)
    rows[1][audit.ident] = "stranger"
    _save(sheet, rows)
    said = _one_line(_read(audit, sheet))
    assert f"{sheet}:3: " in said and "'stranger'" in said and "is not in" in said


@pytest.mark.parametrize("name", AUDITS)
def test_a_sheet_without_the_label_column_is_one_line_naming_the_column(name: str, tmp_path: Path,
                                                                         families: list[Family]) -> None:
    audit, sheet = _filled(name, tmp_path, families)
    _save(sheet, [{k: v for k, v in row.items() if k != audit.label} for row in _rows(sheet)])
    said = _one_line(_read(audit, sheet))
    assert f"{sheet}: its header has no column '{audit.label}'" in said


@pytest.mark.parametrize("name", AUDITS)
def test_a_case_given_two_rows_is_one_line_with_file_and_row(name: str, tmp_path: Path,
                                                             families: list[Family]) -> None:
    """Every audit reads its sheet through one class (schemas.sheets.BlindSheet): a case copied to a second
    row is refused where it is (only the human audit refused it before; the others kept the last row)."""
    audit, sheet = _filled(name, tmp_path, families)
    rows = _rows(sheet)
    _save(sheet, [*rows, rows[0]])
    said = _one_line(_read(audit, sheet))
    assert f"{sheet}:{len(rows) + 2}: {audit.ident} '{rows[0][audit.ident]}' has a second row" in said
