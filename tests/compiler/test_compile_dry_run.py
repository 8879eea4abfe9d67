"""`ladder compile --dry-run` counts only the problems compile would send to the teacher: not one whose
reference answer is skipped before any call (empty, cut off, garbled), nor one already compiled."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app


def test_a_dry_run_counts_no_problem_that_would_be_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")  # the client is made; no call is
    pool = tmp_path / "pool.csv"
    pool.write_text("id,problem,answer\nok,What is $1+2$?,3\nempty,What is $2+2$?,\n"
                    "cut,Solve $x^2=1$.,x_1=x_2=\ngarbled,What is $3+3$?,\\1\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/gpt-4o", "--store",
                                      str(tmp_path / "c.sqlite"), "--max-tokens", "1000", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout.splitlines()[-1])
    assert estimate["calls"] == 1  # every one of the 4 problems was counted
    assert (estimate["problems"], estimate["unusable"]) == (4, 3)
    assert estimate["tokens_out_max"] == 1000
    said = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/gpt-4o", "--store",
                                    str(tmp_path / "c.sqlite"), "--dry-run"])
    assert "about 1 teacher calls" in said.output and "3 skipped for their reference answer" in said.output
