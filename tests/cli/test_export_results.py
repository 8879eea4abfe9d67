"""`ladder export-results` (issue 31, item 10): the table of `Report.to_pandas()` per family or per
rollout as CSV (every cell through oracleladder/schemas/sheets.py: a formula is written as text) or
Parquet, the student read at one setting as `ladder report` reads it; without pandas, one line, exit 2.

On a copy of tests/data/before-house/before.sqlite (a scripted student at K = 2 on six released
families, one with an unusable reference answer), its student renamed to a name a spreadsheet would
run as a formula."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas
from typer.testing import CliRunner

from oracleladder import SyncExperiment
from oracleladder.cli import app
from oracleladder.schemas.sheets import read_rows
from tests.helpers import REPO

BEFORE = REPO / "tests" / "data" / "before-house" / "before.sqlite"
S = "@student"  # '@' starts a formula in a spreadsheet


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "s.sqlite"
    shutil.copy(BEFORE, store)
    with sqlite3.connect(store) as con:
        con.execute("UPDATE names SET name = ? WHERE name = 'openai/student'", (S,))
    return store


def _export(store: Path, out: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["export-results", f"--student={S}", "--store", str(store), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.output.strip()


def _frame(store: Path, per: str = "family") -> pandas.DataFrame:
    with SyncExperiment(store) as ex:
        report = ex.report([S])
    return report.to_pandas(per).convert_dtypes()


def test_csv_per_family_is_to_pandas_formula_safe(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _export(store, tmp_path / "r.csv") == f"5 rows (family) written to {tmp_path / 'r.csv'}"
    rows = list(read_rows(tmp_path / "r.csv"))
    expected = _frame(store)
    assert [r["pid"] for r in rows] == list(expected["pid"]) and len(rows) == 5
    assert {r["student"] for r in rows} == {S}
    assert (tmp_path / "r.csv").read_text().splitlines()[1].startswith(f"'{S},")  # quoted in the file
    for row, (_, want) in zip(rows, expected.iterrows()):
        assert row == {c: "" if pandas.isna(v) else str(v) for c, v in want.items()}
    assert {r["m2_k"] for r in rows} == {"2", ""}  # a milestone a family lacks: empty, the others whole numbers


def test_parquet_and_per_rollout_and_the_run_selection(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _export(store, tmp_path / "r.parquet", "--format", "parquet")
    got, expected = pandas.read_parquet(tmp_path / "r.parquet"), _frame(store)
    pandas.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert str(got["C1_direct_k"].dtype) == "Int64" and got["m2_k"].isna().sum() == 2
    assert _export(store, tmp_path / "ro.parquet", "--format", "parquet", "--per", "rollout").startswith("86 rows (rollout)")
    pandas.testing.assert_frame_equal(pandas.read_parquet(tmp_path / "ro.parquet"), _frame(store, "rollout"),
                                      check_dtype=False)
    _export(store, tmp_path / "k1.csv", "--k", "1")  # ladder report's selection: the first sample only
    assert {r["C1_direct_k"] for r in read_rows(tmp_path / "k1.csv")} == {"1"}


def test_without_pandas_one_line_exit_2(tmp_path: Path) -> None:
    hidden = tmp_path / "no-pandas"  # first on the path: importing pandas fails as when it is not installed
    hidden.mkdir()
    (hidden / "pandas.py").write_text("raise ModuleNotFoundError(\"No module named 'pandas'\", name='pandas')\n")
    p = subprocess.run([sys.executable, "-m", "oracleladder.cli", "export-results", f"--student={S}", "--store",
                        str(_store(tmp_path)), "--out", str(tmp_path / "r.csv")],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{hidden}{os.pathsep}{REPO}"})
    assert p.returncode == 2 and not (tmp_path / "r.csv").exists()
    assert p.stderr == "error: export-results needs pandas: pip install 'oracleladder[pandas]'\n" and not p.stdout, p.stderr


def test_an_export_of_nothing_is_one_line_exit_1(tmp_path: Path) -> None:
    """A student imported from panel records has per-family counts and no rollouts."""
    store, runner = _store(tmp_path), CliRunner()
    assert runner.invoke(app, ["panels", "export", f"--student={S}", "--store", str(store), "--out", str(tmp_path / "p")]).exit_code == 0
    panels = sorted(str(p) for p in (tmp_path / "p").rglob("*.jsonl"))
    assert runner.invoke(app, ["panels", "import", *panels, "--store", str(store), "--student", "panel/x"]).exit_code == 0
    base = ["export-results", "--student", "panel/x", "--store", str(store), "--out", str(tmp_path / "x.csv")]
    assert runner.invoke(app, base).exit_code == 0 and len(list(read_rows(tmp_path / "x.csv"))) == 5
    result = runner.invoke(app, [*base, "--per", "rollout", "--out", str(tmp_path / "r.csv")])
    assert result.exit_code == 1 and result.stderr == "error: nothing to export: no rollout rows for panel/x on 'release'\n"
    assert not (tmp_path / "r.csv").exists()
