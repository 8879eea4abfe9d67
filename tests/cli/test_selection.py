"""Through the command line: one student probed at two budgets against the loopback server is never
pooled (`ladder report` exits 2 naming both), `--max-tokens 256` reports that run alone, `--by-run`
both side by side; and `ladder panels export` then `import` into a fresh store reports the same."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer

PIDS = ("f8a3e468", "de4b7c19")  # two families with short numeric answers
S = "openai/s"


def test_two_budgets_of_one_student(tmp_path: Path, release_data: Path) -> None:
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if f.pid[:8] in PIDS]
    answers = {f.parent_prompt.strip()[-80:]: f.parent_answer for f in fams}
    families, store, runner = tmp_path / "f.jsonl", str(tmp_path / "s.sqlite"), CliRunner()
    write_jsonl(families, (to_released(f) for f in fams))
    assert runner.invoke(app, ["import", str(families), "--store", store]).exit_code == 0

    def student(messages: list[dict], body: dict) -> str:  # right only with the larger budget
        gold = next(a for tail, a in answers.items() if tail in messages[-1]["content"])
        return f"\\boxed{{{gold}}}" if body["max_tokens"] == 512 else r"\boxed{987654321}"

    with LoopbackServer(script=student) as server:
        for budget in ("256", "512"):
            probed = runner.invoke(app, ["probe", "--student", S, "--base-url", server.openai_base_url, "--k", "1",
                                         "--no-stage0", "--conditions", "C1_direct", "--max-tokens", budget,
                                         "--store", store])
            assert probed.exit_code == 0, probed.output
    report = ["report", "--student", S, "--store", store]
    refused = runner.invoke(app, [*report, "--out", str(tmp_path / "pooled")])
    assert refused.exit_code == 2
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "max_tokens=256" in refused.stderr and "max_tokens=512" in refused.stderr
    assert "--max-tokens 256 or --max-tokens 512" in refused.stderr
    assert not (tmp_path / "pooled" / "report.json").exists()

    alone = runner.invoke(app, [*report, "--max-tokens", "256", "--out", str(tmp_path / "256")])
    assert alone.exit_code == 0, alone.output
    at_256 = json.loads((tmp_path / "256" / "report.json").read_text())["students"][S]
    assert (at_256["k"], at_256["outcomes"]["Direct"], at_256["conditions"]["C1_direct"]["rollouts"]) == (1, 0, 2)
    assert at_256["settings"] == "K = 1, max_tokens = 256, temperature = 1.0, grader = strict"

    side = runner.invoke(app, [*report, "--by-run", "--out", str(tmp_path / "side")])
    assert side.exit_code == 0, side.output
    both = json.loads((tmp_path / "side" / "report.json").read_text())["students"]
    assert {s: t["outcomes"]["Direct"] for s, t in both.items()} == {f"{S}@max_tokens=256": 0,
                                                                     f"{S}@max_tokens=512": 2}


def test_panels_export_then_import(tmp_path: Path, release_data: Path) -> None:
    store, fresh, runner = str(tmp_path / "s.sqlite"), str(tmp_path / "fresh.sqlite"), CliRunner()
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if f.pid[:8] in PIDS]
    families = tmp_path / "f.jsonl"
    write_jsonl(families, (to_released(f) for f in fams))
    for path in (store, fresh):
        assert runner.invoke(app, ["import", str(families), "--store", path]).exit_code == 0
    with LoopbackServer({"*": r"\boxed{3}"}) as server:
        probed = runner.invoke(app, ["probe", "--student", S, "--base-url", server.openai_base_url, "--k", "2",
                                     "--store", store])
        assert probed.exit_code == 0, probed.output
    out = tmp_path / "panels"
    exported = runner.invoke(app, ["panels", "export", "--student", S, "--out", str(out), "--store", store])
    assert exported.exit_code == 0, exported.output
    files = [str(out / "oracle_panel" / "openai_s.jsonl"), str(out / "stage0_panel" / "openai_s.jsonl")]
    imported = runner.invoke(app, ["panels", "import", *files, "--max-tokens", "4096", "--store", fresh])
    assert imported.exit_code == 0, imported.output
    assert f"panel records of {S} into {fresh}" in imported.stderr
    tables = {}
    for name, path in (("probed", store), ("imported", fresh)):
        result = runner.invoke(app, ["report", "--student", S, "--store", path, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        tables[name] = json.loads((tmp_path / name / "report.json").read_text())["students"][S]
    for key in ("outcomes", "taxonomy", "taxonomy_fraction", "stage0", "families"):
        assert tables["imported"][key] == tables["probed"][key], key
    assert tables["imported"]["settings"].endswith("provenance = imported panel")
