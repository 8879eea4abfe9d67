"""The notebook API of a report (issue 31, item 10): "not run" is None, a short repr and an HTML one,
and `to_pandas()` per family (the rows of report.json's "families") and per rollout.

On a copy of tests/data/before-house/before.sqlite (a scripted student at K = 2 on six released
families, one of which has an unusable reference answer)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from oracleladder import Experiment

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house" / "before.sqlite"
S = "openai/student"


def store_copy(tmp_path: Path, *, stage0: bool = True) -> Path:
    store = tmp_path / "s.sqlite"
    shutil.copy(BEFORE, store)
    if not stage0:
        with sqlite3.connect(store) as con:
            con.execute("DELETE FROM rollouts WHERE target_ref IN (SELECT id FROM names WHERE name LIKE 'm%')")
    return store


async def test_not_run_is_none(tmp_path: Path) -> None:
    async with Experiment(store_copy(tmp_path, stage0=False)) as ex:
        report = await ex.report([S])
    taxonomy = report.summary(S)["taxonomy"]
    assert taxonomy["Direct"] == 3  # a Direct family needs no milestone test
    assert {g: v for g, v in taxonomy.items() if g != "Direct"} == {
        "Roadmap-gap": None, "Milestone-execution-gap": None, "Composition-gap": None,
        "Missing-milestone-gap": None, "Capability-gap": None}
    assert report.summary(S)["milestone_test_pass"] is None
    frame = report.to_pandas()
    assert frame["milestone_test_strict"].isna().all() and frame["gap"].isna().sum() == 2  # the two not Direct


async def test_repr_and_html(tmp_path: Path) -> None:
    async with Experiment(store_copy(tmp_path)) as ex:
        report = await ex.report([S])
    assert repr(report) == f"<Report on 'release', tau = 1: {S} (5 families)>"
    html = report._repr_html_()
    assert len(html) < 2000 and "<table>" in html
    assert f"<td>{S}</td><td>K = 2, max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown</td><td>5</td>" in html
    assert "<td>3</td><td>0</td><td>0</td><td>1</td><td>1</td>" in html  # Direct .. Unrecovered


async def test_to_pandas_is_report_json_per_family_and_the_rollouts(tmp_path: Path) -> None:
    async with Experiment(store_copy(tmp_path)) as ex:
        report = await ex.report([S])
        written = await ex.write_report(report, tmp_path / "out")
    frame = report.to_pandas()
    rows = written["students"][S]["families"]
    assert len(frame) == len(rows) == 5 and list(frame["pid"]) == [r["pid"] for r in rows]
    for row, (_, got) in zip(rows, frame.iterrows()):
        assert got["student"] == S and got["outcome"] == row["outcome"] and got["gap"] == row["gap"]
        for target, count in {**row["conditions"], **row["milestones"]}.items():
            assert (got[f"{target}_n_correct"], got[f"{target}_k"]) == (count["n_correct"], count["k"])
    assert frame["outcome"].value_counts().to_dict() == {"Direct": 3, "Answers-Needed": 1, "Unrecovered": 1}
    per_rollout = report.to_pandas("rollout")  # b36a1161 (an unusable reference answer) is in neither table
    with sqlite3.connect(tmp_path / "s.sqlite") as con:
        (stored,), = con.execute("SELECT COUNT(*) FROM rollouts_named WHERE pid NOT LIKE 'b36a1161%'").fetchall()
    assert len(per_rollout) == stored and set(per_rollout["sample"]) == {0, 1}
    assert json.loads(per_rollout.iloc[0].to_json())["student"] == S


async def test_stage0_not_run_has_no_milestone_counts(tmp_path: Path) -> None:
    async with Experiment(store_copy(tmp_path, stage0=False)) as ex:
        stage0 = (await ex.report([S])).summary(S)["stage0"]
    assert stage0 == {"stage0_run": False, "families_with_stage0": 0, "pass_strict": None, "pass_fraction": None,
                      "mean_tested_milestones": None, "milestones_tested": None, "milestones_solved": None,
                      "milestone_solve_rate": None}
