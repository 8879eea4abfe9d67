"""Per-family results out of a store and into another in the release's panel records (issue 30,
item 2): the same numbers come back, a panel in the release's format reports beside probed students,
its provenance shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.experiment import ExperimentError
from oracleladder.schemas.jsonl import InputError

DATA = Path(__file__).resolve().parents[1] / "data"
S = "openai/student"
QWEN = "qwen3_8b_pre_rl"
# tests/data/panels (see tests/data/README.md): the families with C1 >= 1 of 8 in the release's format audit
DIRECT = ["15d38f7a", "6553b443", "c52e7627", "d6d28e39", "f8a3e468"]


async def test_export_then_import_gives_the_same_counts(tmp_path: Path) -> None:
    probed = tmp_path / "probed.sqlite"
    shutil.copy(DATA / "before-house" / "before.sqlite", probed)
    async with Experiment(probed) as ex:
        before = await ex.report([S])
        oracle, stage0, n, warned = await ex.export_panels(S, tmp_path / "panels")
        await ex.export(tmp_path / "families.jsonl")
    assert (oracle.name, oracle.parent.name, stage0.parent.name) == ("openai_student.jsonl", "oracle_panel",
                                                                     "stage0_panel")
    records = [json.loads(line) for line in oracle.read_text().splitlines()]
    # the release's record, field for field: 6 families x 6 conditions at K = 2
    assert len(records) == 36 and set(records[0]) == {"model", "condition", "pid", "n_correct", "k"}
    assert {r["k"] for r in records} == {2} and n == 36 + len(stage0.read_text().splitlines())
    assert warned == []  # no answer of the scripted student was cut off or unreadable

    async with Experiment(tmp_path / "fresh.sqlite") as ex:
        await ex.import_families(tmp_path / "families.jsonl")
        assert await ex.import_panels([oracle, stage0], max_tokens=256) == ({S: n}, 0, {S: []})
        after = await ex.report([S])
        written = await ex.write_report(after, tmp_path / "report")
    for table in ("outcomes", "taxonomy", "taxonomy_fraction", "stage0", "conditions", "threshold_sweep"):
        assert after.summary(S)[table] == before.summary(S)[table], table
    assert after.settings == {S: "K = 2, max_tokens = 256, temperature = ?, grader = ?, prompts = unknown, "
                                 "provenance = imported panel"}
    assert written["students"][S]["format"] is None  # no rollouts, so no format audit
    assert after.picked[S].rollouts == [] and after.to_pandas("rollout").empty


async def test_a_release_panel_reports_beside_a_probed_student(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    shutil.copy(DATA / "before-house" / "before.sqlite", store)
    panels = DATA / "panels"
    async with Experiment(store) as ex:
        await ex.import_families(DATA / "families_sample.jsonl", source="sample")
        counts = await ex.import_panels([panels / "oracle_panel_4k_qwen3_8b_pre_rl.jsonl",
                                         panels / "stage0_panel_4k_qwen3_8b_pre_rl.jsonl"],
                                        source="sample", max_tokens=4096, temperature=1.0, grader="paper")
        assert counts == ({QWEN: 50 + 57}, 0, {QWEN: []})  # the release's records say nothing of cut-off answers
        report = await ex.report([QWEN], source="sample")
        t = report.summary(QWEN)
        # 25 families in the panel; b36a1161's reference answer is unusable (left out, listed)
        assert any(p.startswith("b36a1161") for p in report.ungradable) and t["n"] == 24
        assert t["outcomes_known"]["Direct"] == len(DIRECT)
        # C2 is not in the panel: a family C1 does not solve has no known outcome, never "Unrecovered"
        assert t["outcome_undetermined"] == t["n"] - t["outcomes_known"]["Direct"]
        # the anchor screen kept families whose every tested milestone it solved: all pass the milestone test
        assert t["stage0"]["pass_strict"] == t["n"] and t["k"] == 8
        assert report.settings[QWEN] == ("K = 8, max_tokens = 4096, temperature = 1.0, grader = paper, prompts = unknown, "
                                         "provenance = imported panel")
        written = await ex.write_report(report, tmp_path / "report")
        assert written["students"][QWEN]["settings"].endswith("provenance = imported panel")
        md = (tmp_path / "report" / "report.md").read_text()
        assert f"- {QWEN}: not run: C2, C2-random, C2-generic, C3-mismatched." in md

        # a published model beside a probed one: both on the probed student's set, each at its settings
        # this store's release set holds 6 families, 5 of them in the panel (all but 3a9f94cc): 2 records each
        assert await ex.import_panels([panels / "oracle_panel_4k_qwen3_8b_pre_rl.jsonl"], student="published",
                                      source="release") == ({"published": 10}, 40, {"published": []})
        both = await ex.report([S, "published"])
        assert list(both.results) == [S, "published"]
        assert both.settings["published"].endswith("provenance = imported panel")
        assert "provenance" not in both.settings[S]


async def test_a_panel_naming_another_set_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    shutil.copy(DATA / "before-house" / "before.sqlite", store)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"model": "m", "condition": "C1_direct", "pid": "no-such-family", "n_correct": 1,
                               "k": 8}) + "\n")
    over = tmp_path / "over.jsonl"
    over.write_text(json.dumps({"model": "m", "condition": "C1_direct", "pid": "x", "n_correct": 9, "k": 8}) + "\n")
    async with Experiment(store) as ex:
        with pytest.raises(InputError, match="no panel record on a family of the roadmap set \\(1 on other"):
            await ex.import_panels([bad])
        with pytest.raises(InputError, match="n_correct 9 of k 8 is no count"):
            await ex.import_panels([over])
        with pytest.raises(ExperimentError, match="unknown grader 'papr'; known: paper, strict, extended"):
            await ex.import_panels([bad], grader="papr")
        with pytest.raises(ExperimentError, match="no rollouts of student 'm'"):
            await ex.report(["m"])  # nothing of a refused file was stored


def test_repeated_panel_records_count_once_and_contradicting_ones_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(DATA / "families_sample.jsonl"), "--store", str(store)]).exit_code == 0
    first = json.loads((DATA / "panels" / "oracle_panel_4k_qwen3_8b_pre_rl.jsonl").read_text().splitlines()[0])
    again, other = tmp_path / "again.jsonl", tmp_path / "other.jsonl"
    again.write_text(f"{json.dumps(first)}\n{json.dumps(first)}\n")
    other.write_text(json.dumps({**first, "n_correct": (first["n_correct"] + 1) % (first["k"] + 1)}) + "\n")
    imported = runner.invoke(app, ["panels", "import", str(again), "--store", str(store)])
    assert imported.exit_code == 0, imported.output
    assert f"imported 1 panel records of {first['model']}" in imported.stderr
    refused = runner.invoke(app, ["panels", "import", str(again), str(other), "--store", str(store)])
    assert refused.exit_code == 2
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (f"error: {other}: {first['model']} on pid '{first['pid']}' {first['condition']} is "
            f"{(first['n_correct'] + 1) % (first['k'] + 1)} of {first['k']} here and {first['n_correct']} of "
            f"{first['k']} in {again}: keep one of them") in refused.stderr
