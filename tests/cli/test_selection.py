"""Through the command line: one student probed at two budgets, or under two versions of a prompt,
is never pooled (`ladder report` exits 2 naming both), `--max-tokens 256`
(`--prompt`, `--run`) reports one alone, `--by-run` both side by side; and `ladder panels export` then
`import` into a fresh store reports the same."""

from __future__ import annotations

import json
import shutil
import sqlite3
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import prompts
from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from tests.helpers import fake

PIDS = ("f8a3e468", "de4b7c19")  # two families with short numeric answers
S = "openai/s"  # a student whose answer depends on its request's body: on the loopback server
F = "fake/s"  # one that only answers


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> tuple[list[Family], Path]:
    """The two families and a store holding them (`ladder import`), made once: each test copies the store."""
    folder = tmp_path_factory.mktemp("two")
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if f.pid[:8] in PIDS]
    write_jsonl(folder / "f.jsonl", (to_released(f) for f in fams))
    imported = CliRunner().invoke(app, ["import", str(folder / "f.jsonl"), "--store", str(folder / "s.sqlite")])
    assert imported.exit_code == 0, imported.output
    assert not (folder / "s.sqlite-wal").exists(), "the store was left open"  # the file is all of it
    return fams, folder / "s.sqlite"


def _copy(two: tuple[list[Family], Path], to: Path) -> str:
    """A store of this test's own holding the two families."""
    return str(shutil.copy(two[1], to))


def test_two_budgets_of_one_student(tmp_path: Path, two: tuple[list[Family], Path]) -> None:
    answers = {f.parent_prompt.strip()[-80:]: f.parent_answer for f in two[0]}
    store, runner = _copy(two, tmp_path / "s.sqlite"), CliRunner()

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
    sent = f"c1_direct@{prompts.load('c1_direct').version} student_system@{prompts.load('student_system').version}"
    assert at_256["settings"] == f"K = 1, max_tokens = 256, temperature = 1.0, grader = strict, prompts = {sent}"

    side = runner.invoke(app, [*report, "--by-run", "--out", str(tmp_path / "side")])
    assert side.exit_code == 0, side.output
    both = json.loads((tmp_path / "side" / "report.json").read_text())["students"]
    assert {s: t["outcomes"]["Direct"] for s, t in both.items()} == {f"{S}@max_tokens=256": 0,
                                                                     f"{S}@max_tokens=512": 2}


def test_panels_export_then_import(tmp_path: Path, two: tuple[list[Family], Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store, fresh, runner = _copy(two, tmp_path / "s.sqlite"), _copy(two, tmp_path / "fresh.sqlite"), CliRunner()
    fake.script(monkeypatch, tmp_path, {"answer": r"\boxed{3}"})
    probed = runner.invoke(app, ["probe", "--student", F, "--k", "2", "--store", store])
    assert probed.exit_code == 0, probed.output
    out = tmp_path / "panels"
    exported = runner.invoke(app, ["panels", "export", "--student", F, "--out", str(out), "--store", store])
    assert exported.exit_code == 0, exported.output
    files = [str(out / "oracle_panel" / "fake_s.jsonl"), str(out / "stage0_panel" / "fake_s.jsonl")]
    imported = runner.invoke(app, ["panels", "import", *files, "--max-tokens", "4096", "--store", fresh])
    assert imported.exit_code == 0, imported.output
    assert f"panel records of {F} into {fresh}" in imported.stderr
    tables = {}
    for name, path in (("probed", store), ("imported", fresh)):
        result = runner.invoke(app, ["report", "--student", F, "--store", path, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        tables[name] = json.loads((tmp_path / name / "report.json").read_text())["students"][F]
    for key in ("outcomes", "taxonomy", "taxonomy_fraction", "stage0", "families"):
        assert tables["imported"][key] == tables["probed"][key], key
    assert tables["imported"]["settings"].endswith("provenance = imported panel")


def _recorded(store: str) -> list[tuple[str, dict]]:
    """Each probe run's id and the prompt versions it recorded, in the order made."""
    with sqlite3.connect(store) as con:
        return [(i, json.loads(c)["prompts"]) for i, c in con.execute("SELECT id, config FROM runs ORDER BY rowid")]


def test_two_prompt_versions_of_one_student(tmp_path: Path, two: tuple[list[Family], Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store, runner = _copy(two, tmp_path / "s.sqlite"), CliRunner()
    v1 = {n: prompts.load(n).version for n in ("c1_direct", "c2_descriptions", "student_system")}
    # the templates as prompts/ reads them, c1_direct changed: its version is another
    changed = tmp_path / "prompts"
    shutil.copytree(Path(str(resources.files(prompts))), changed)
    (changed / "c1_direct.txt").write_text(prompts.load("c1_direct").text + "\nShow your work.\n")
    v2 = prompts.Prompt("c1_direct", (changed / "c1_direct.txt").read_text()).version
    report = ["report", "--student", F, "--store", store]

    fake.script(monkeypatch, tmp_path, {"answer": r"\boxed{3}"})

    def probe(condition: str) -> None:
        probed = runner.invoke(app, ["probe", "--student", F, "--k", "1", "--no-stage0", "--conditions", condition,
                                     "--store", store])
        assert probed.exit_code == 0, probed.output

    probe("C1")
    probe("C2")  # the same versions of what both sent: one group of two runs
    pooled = runner.invoke(app, [*report, "--out", str(tmp_path / "pooled")])
    assert pooled.exit_code == 0, pooled.output
    with monkeypatch.context() as m:
        m.setattr(prompts, "FOLDERS", [changed])  # the templates as the package would read them, c1_direct changed
        prompts.load.cache_clear()
        probe("C1")
    prompts.load.cache_clear()
    (first, sent1), (second, sent2), (third, sent3) = _recorded(store)
    assert sent1 == {"c1_direct": v1["c1_direct"], "student_system": v1["student_system"]}
    assert sent2 == {"c2_descriptions": v1["c2_descriptions"], "student_system": v1["student_system"]}
    assert sent3 == {"c1_direct": v2, "student_system": v1["student_system"]} and v2 != v1["c1_direct"]
    at = json.loads((tmp_path / "pooled" / "report.json").read_text())["students"][F]["settings"]
    assert at.endswith(f"prompts = c1_direct@{v1['c1_direct']} c2_descriptions@{v1['c2_descriptions']} "
                       f"student_system@{v1['student_system']}")

    refused = runner.invoke(app, [*report, "--out", str(tmp_path / "mixed")])
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1
    old, new = f"c1_direct@{v1['c1_direct']}", f"c1_direct@{v2}"
    assert f"prompts={old} (K = 1, runs {first}, {second})" in refused.stderr
    assert f"prompts={new} (K = 1, runs {third})" in refused.stderr
    assert f"pick one with --prompt {old} or --prompt {new}" in refused.stderr

    def read(*pick: str) -> dict:
        out = tmp_path / "-".join(pick)
        result = runner.invoke(app, [*report, *pick, "--out", str(out)])
        assert result.exit_code == 0, result.output
        return json.loads((out / "report.json").read_text())["students"]

    alone = read("--run", third)[F]  # C1 of the new version alone: C2 was asked under the old
    assert alone["conditions"]["C1_direct"]["rollouts"] == 2 and alone["conditions"]["C2_descriptions"] is None
    assert alone["settings"].endswith(f"prompts = {new} student_system@{v1['student_system']}")
    before = read("--prompt", old)[F]
    assert [before["conditions"][c]["rollouts"] for c in ("C1_direct", "C2_descriptions")] == [2, 2]
    assert list(read("--by-run")) == [f"{F}@prompts={old}", f"{F}@prompts={new}"]
