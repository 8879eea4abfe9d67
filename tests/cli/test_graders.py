"""The grader travels with a probe run: the report names it, `ladder compare` refuses to set
runs graded differently side by side unless told. The report leaves out, and lists, a family
whose reference answer is unusable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import SyncExperiment
from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from tests.helpers import fake

PIDS = ("f8a3e468", "de4b7c19", "b36a1161")  # two short numeric answers, and the garbled "\\1"


def test_graders_are_named_and_never_mixed_silently(tmp_path: Path, release_data: Path) -> None:
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if f.pid[:8] in PIDS]
    answers = {f.parent_prompt: f.parent_answer for f in fams}
    store, runner = str(tmp_path / "g.sqlite"), CliRunner()
    for name in ("a", "b"):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, (to_released(f) for f in fams))
        assert runner.invoke(app, ["import", str(path), "--source", f"set-{name}", "--store", store]).exit_code == 0

    def student(messages: list[dict], body: dict) -> str:
        gold = next(a for p, a in answers.items() if p.strip()[-80:] in messages[-1]["content"])
        return f"\\boxed{{{gold}}}"

    with LoopbackServer(script=student) as server:
        for name, grader in (("a", "paper"), ("b", "strict")):
            result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", server.openai_base_url,
                                         "--k", "1", "--no-stage0", "--conditions", "C1_direct", "--source",
                                         f"set-{name}", "--store", store, "--grader", grader])
            assert result.exit_code == 0, result.output
    args = ["compare", "--a", "set-a", "--b", "set-b", "--student", "openai/s", "--store", store,
            "--out", str(tmp_path / "cmp")]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "paper (paper-1)" in refused.output and "strict (strict-2)" in refused.output
    assert runner.invoke(app, [*args, "--allow-mixed-graders"]).exit_code == 0
    out = tmp_path / "rep"
    result = runner.invoke(app, ["report", "--student", "openai/s", "--source", "set-a", "--store", store,
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text()
    assert "Graded by: openai/s: paper (paper-1)." in md
    assert "1 family not graded, their reference answer is unusable: b36a1161" in md
    report = json.loads((out / "report.json").read_text())
    assert report["students"]["openai/s"]["n"] == 2
    assert list(report["meta"]["ungradable_reference"]) == [f.pid for f in fams if f.pid.startswith("b36a1161")]


def test_a_run_stored_before_graders_had_names_is_read_with_its_grader(sample_store: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe run's config from before graders had names says only `"extended": true` (or false):
    read back, it names the extended grader (or strict)."""
    fake.script(monkeypatch, tmp_path, {"answer": r"\boxed{1}"})
    result = CliRunner().invoke(app, ["probe", "--student", "fake/s", "--k", "1", "--limit", "2", "--no-stage0",
                                      "--conditions", "C1", "--store", str(sample_store)])
    assert result.exit_code == 0, result.output
    for extended, grader in ((True, "extended (extended-2)"), (False, "strict (strict-2)")):
        with sqlite3.connect(sample_store) as con:
            (run_id, config), = con.execute("SELECT id, config FROM runs WHERE kind = 'probe'").fetchall()
            old = {k: v for k, v in json.loads(config).items() if k != "grader"} | {"extended": extended}
            con.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(old), run_id))
        with SyncExperiment(sample_store, workers=1) as ex:
            assert ex.graders("fake/s") == grader
