"""A store made before the restructuring of issue 28 opens and reports the same numbers.

tests/data/before-house/ holds a store made by the code at commit 083f1f3 the way a user makes one
(`import` of six released families, a `probe` of a scripted student at K=2 against the loopback
server) and the report.json and report.md that code wrote from it. Today's code must write the same
numbers from a copy of that store: every field of that report.json with its value, and every line of
that report.md in its order (today's reports add to them: the settings each table was computed at,
the per-family rows, the count form of Table 12). One wording changed since (issue 43): a count of one
says "1 family", where that code said "1 families"."""

from __future__ import annotations

import json
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
    _within(json.loads((BEFORE / "report.json").read_text()), json.loads((tmp_path / "report" / "report.json").read_text()))
    now = iter((tmp_path / "report" / "report.md").read_text().splitlines())
    for line in (BEFORE / "report.md").read_text().replace("- 1 families ", "- 1 family ").splitlines():
        assert any(line == later for later in now), line  # each old line, in the old order


def _within(before: object, now: object, path: str = "") -> None:
    """Every field of ``before`` is in ``now`` with the same value (a list: item by item)."""
    if isinstance(before, dict):
        assert isinstance(now, dict), path
        for key, value in before.items():
            assert key in now, f"{path}/{key}"
            _within(value, now[key], f"{path}/{key}")
    elif isinstance(before, list):
        assert isinstance(now, list) and len(now) == len(before), path
        for i, (b, n) in enumerate(zip(before, now)):
            _within(b, n, f"{path}/{i}")
    else:
        assert before == now, path
