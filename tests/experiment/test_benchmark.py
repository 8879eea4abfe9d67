"""The plain benchmark probe, the paper's external comparator (Tables 1 and 17), end to end with a fake/
student: `ladder benchmark` on a pool file, then Table 1's MATH score column measured by
`ladder report --benchmark`.

By hand. The pool: a (2+2 = 4), b (2+3 = 5), c (no reference answer: left out and counted). The student
answers 4 to a every time, and to b 5 in its first sample, 4 in its second (one right of two).
K = 2: a 2 of 2, b 1 of 2. pass@1 = mean(1, 0.5) = 0.75; pass@2 = mean(1, 1 - C(1, 2) / C(2, 2) = 1) = 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from tests.helpers import fake

POOL = [{"id": "a", "problem": "What is 2+2?", "answer": "4"}, {"id": "b", "problem": "What is 2+3?", "answer": "5"},
        {"id": "c", "problem": "What is 1+3?", "answer": ""}]


def test_a_benchmark_probe_measures_table1s_last_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool, store, runner = tmp_path / "pool.jsonl", str(tmp_path / "b.sqlite"), CliRunner()
    pool.write_text("".join(json.dumps(r) + "\n" for r in POOL))
    # 2+3's first sample is right, its second wrong; 2+2 right twice
    fake.script(monkeypatch, tmp_path, {"prompt": r"2\+3", "answer": ["\\boxed{5}", "\\boxed{4}"]},
                {"answer": "\\boxed{4}"})
    args = ["benchmark", str(pool), "--student", "fake/s", "--k", "2", "--max-tokens", "64", "--store", store]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert (r["name"], r["problems"], r["no_answer"], r["complete"]) == ("pool", 2, 1, 2)
    assert (r["pass_at_1"], r["pass_at_k"]) == (0.75, 1.0)
    again = runner.invoke(app, args)  # the cache answers a rerun: the same scores, no call made
    assert again.exit_code == 0 and "pass@1 0.750, pass@2 1.000" in again.output
    runs = runner.invoke(app, ["runs", "--store", store]).output.splitlines()
    assert runs[-1].endswith("\treused 4 answers from earlier runs")
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", "--student", "fake/s", "--source", "benchmark:pool", "--benchmark", "pool",
                                 "--max-tokens", "64", "--out", str(out), "--store", store])
    assert result.exit_code == 0, result.output
    row = next(line for line in (out / "report.md").read_text().splitlines() if line.startswith("| fake/s | 2 |"))
    assert row.endswith("| 75.0% |")  # the MATH score column, measured
    assert json.loads((out / "report.json").read_text())["students"]["fake/s"]["summary"]["math_score"] == 0.75
    result = runner.invoke(app, ["report", "--student", "fake/s", "--source", "benchmark:pool",
                                 "--max-tokens", "64", "--out", str(tmp_path / "plain"), "--store", store])
    row = next(line for line in (tmp_path / "plain" / "report.md").read_text().splitlines()
               if line.startswith("| fake/s | 2 |"))
    assert row.endswith("| not run |")  # no --benchmark: not run, never 0
