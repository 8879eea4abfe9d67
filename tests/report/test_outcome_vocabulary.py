"""One outcome per family, the same on every surface (issue 43, item 6): after a C1-only probe a family
C1 fails is "Not determined" (no C2 or C3 run to read), never Unrecovered, in ``summary()["outcomes"]``,
``to_pandas()``, report.json, report.md and the HTML report's data.

On a copy of tests/data/before-house/before.sqlite (a scripted student at K = 2 on six released
families) with every rollout but C1's deleted."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from oracleladder import Experiment
from oracleladder.ladder.outcomes import NOT_DETERMINED, FamilyResults, outcome_label

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house" / "before.sqlite"
S = "openai/student"


def _c1_only(tmp_path: Path) -> Path:
    store = tmp_path / "s.sqlite"
    shutil.copy(BEFORE, store)
    with sqlite3.connect(store) as con:
        con.execute("DELETE FROM rollouts WHERE target_ref NOT IN (SELECT id FROM names WHERE name = 'C1_direct')")
    return store


def _overview(site: Path) -> dict:
    text = (site / "data" / "overview.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def test_the_one_rule() -> None:
    failed = {"C1_direct": [False, False]}
    assert outcome_label(FamilyResults("p", ladder=failed)) == NOT_DETERMINED
    assert outcome_label(FamilyResults("p", ladder={**failed, "C2_descriptions": [False]})) == NOT_DETERMINED
    assert outcome_label(FamilyResults("p", ladder={**failed, "C2_descriptions": [True]})) == "Roadmap-Needed"
    every = {**failed, "C2_descriptions": [False], "C3_gold_answers": [False]}
    assert outcome_label(FamilyResults("p", ladder=every)) == "Unrecovered"
    assert outcome_label(FamilyResults("p", ladder={"C1_direct": [False, True]})) == "Direct"


async def test_a_failed_family_of_a_c1_only_probe_is_not_determined_everywhere(tmp_path: Path) -> None:
    async with Experiment(_c1_only(tmp_path)) as ex:
        report = await ex.report([S])
        written = await ex.write_report(report, tmp_path / "out", html=True)
    summary = report.summary(S)
    # before.sqlite: 3 of the 5 families the report keeps are solved directly
    assert (summary["outcomes"]["Direct"], summary["outcomes"][NOT_DETERMINED], summary["outcomes"]["Unrecovered"]) \
        == (3, 2, 0)
    assert summary["outcome_undetermined"] == 2 and summary["outcomes_known"]["Unrecovered"] == 0
    assert summary["summary"]["solved_any"] == 3  # a rung not run solves nothing
    assert summary["threshold_sweep"]["1"][NOT_DETERMINED] == 2

    frame = report.to_pandas()
    assert frame["outcome"].value_counts().to_dict() == {"Direct": 3, NOT_DETERMINED: 2}
    assert frame.loc[frame["outcome"] == NOT_DETERMINED, "outcome_known"].isna().all()

    stored = written["students"][S]
    assert stored["outcomes"] == summary["outcomes"]
    assert [r["outcome"] for r in stored["families"]] == list(frame["outcome"])

    md = (tmp_path / "out" / "report.md").read_text()
    table9 = md[md.index("## Threshold sweep"):md.index("## ", md.index("## Threshold sweep") + 3)]
    assert f"| {NOT_DETERMINED} |" in table9 and "Unrecovered | Not determined |" in table9
    assert "| 1 (default) | 3 | not run | 0 | 0 | 0 | 2 |" in table9
    assert "Fingerprint cells: Direct/Roadmap-Needed/Answers-Needed/Unrecovered/Not determined" in md

    html = _overview(tmp_path / "out" / "html")
    chart = html["report"]["students"][S]
    assert (chart["outcome_undetermined"], chart["outcomes_known"]["Unrecovered"]) == (2, 0)
    labels = [f["labels"][S]["outcome"] for f in html["families"]]
    assert sorted(labels) == sorted(frame["outcome"])
