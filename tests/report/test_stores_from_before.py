"""A store made before the restructuring of issue 28 opens and reports the same numbers.

tests/data/before-house/ holds a store made by the code at commit 083f1f3 the way a user makes one
(`import` of six released families, a `probe` of a scripted student at K=2 against the loopback
server) and the report.json and report.md that code wrote from it. Today's code must write the same
two files from a copy of that store, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

from oracleladder import Experiment

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house"


async def test_a_store_from_before_reports_the_same_numbers(tmp_path: Path) -> None:
    store = tmp_path / "before.sqlite"
    shutil.copy(BEFORE / "before.sqlite", store)
    async with Experiment(store) as ex:
        report = await ex.report(["openai/student"])
        await ex.write_report(report, tmp_path / "report")
    assert report.summary("openai/student")["outcomes"] == {"Direct": 3, "Roadmap-Needed": 0, "Answers-Needed": 1,
                                                           "Unrecovered": 1}
    for name in ("report.json", "report.md"):
        assert (tmp_path / "report" / name).read_text() == (BEFORE / name).read_text(), name
