"""`ladder funnel --out DIR` adds the funnel to DIR/report.json, and a report.json it cannot add to (not
JSON, not an object) is one line naming the file, the file left as it was."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '"a report"', "\xff\xfe"])
def test_a_report_json_that_is_no_object_is_one_line(sample_store: Path, tmp_path: Path, content: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_bytes(content.encode("latin-1"))
    result = CliRunner().invoke(app, ["funnel", "--source", "release", "--out", str(out), "--store", str(sample_store)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().count("\n") == 0 and f"{out / 'report.json'}: not a report" in result.output
    assert (out / "report.json").read_bytes() == content.encode("latin-1")


def test_the_funnel_joins_the_keys_of_a_report(sample_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text('{"students": {}}')
    result = CliRunner().invoke(app, ["funnel", "--source", "release", "--out", str(out), "--store", str(sample_store),
                                      "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["students"] == {} and report["funnel"]["candidates"] == 55
