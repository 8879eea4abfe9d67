"""The raw-output retest's figure (the explainer's Figure 8; issue 47 item 6): two students' graded sheets of
the same families, written here in the retest's own sheet and key formats and read back by `ladder audit
retest --read`, drawn one bar per sheet with the attempts correct by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.audit import retest as rt
from oracleladder.cli import app
from oracleladder.report.plots import retest_figure
from oracleladder.schemas.sheets import key_path

FAMILIES = ("ff548f26-aaaa", "0b1c2d3e-bbbb")


def sheet(folder: Path, student: str, correct: dict[str, int], k: int = 4) -> Path:
    """A graded sheet of C3 attempts: ``correct[pid]`` of ``k`` graded yes by hand; the verifier rejected all."""
    path = folder / f"{student}.csv"
    attempts, rows = {}, []
    for pid in FAMILIES:
        for i in range(k):
            name = f"attempt-{len(rows) + 1:03d}"
            attempts[name] = {"pid": pid, "target": "C3_gold_answers", "k": i, "call_key": f"{student}{pid}{i}",
                              "cascade": "NOT_ACCEPT"}
            rows.append([name, pid, "C3", "problem", "7", "\\boxed{7}", "yes" if i < correct[pid] else "no", ""])
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([list(rt.COLUMNS), *rows])
    key_path(path).write_text(json.dumps({"student": student, "settings": "K = 4", "attempts": attempts}))
    return path


def test_two_sheets_side_by_side(tmp_path: Path) -> None:
    qwen = sheet(tmp_path, "qwen3-8b", {FAMILIES[0]: 0, FAMILIES[1]: 3})
    gpt = sheet(tmp_path, "gpt-oss-20b", {FAMILIES[0]: 2, FAMILIES[1]: 4})
    _, ax, drawn = retest_figure([rt.read_sheet(qwen), rt.read_sheet(gpt)])
    # read_sheet orders families by pid: 0b1c2d3e first
    assert drawn == {"qwen3-8b": [75.0, 0.0], "gpt-oss-20b": [100.0, 50.0]}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0b1c2d3e", "ff548f26"]

    png = tmp_path / "retest.png"
    result = CliRunner().invoke(app, ["audit", "retest", "--read", str(qwen), "--read", str(gpt), "--figure", str(png)])
    assert result.exit_code == 0, result.output
    assert "qwen3-8b (K = 4)" in result.output and "gpt-oss-20b (K = 4)" in result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    one = CliRunner().invoke(app, ["audit", "retest", "--read", str(qwen), "--json"])  # one sheet: its result, as before
    assert json.loads(one.stdout)["student"] == "qwen3-8b"
    alone = CliRunner().invoke(app, ["audit", "retest", "--figure", str(png)])
    assert alone.exit_code == 2 and "--figure draws graded sheets" in alone.output
