"""The terminal's tables (report.console) from hand-built typed data: the funnel of `ladder funnel`, the
re-anchoring tables of `ladder reanchor`, the lines `ladder report` prints for verdicts left out."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from oracleladder.construction.funnel import Fate, funnel
from oracleladder.construction.reanchor import reanchor
from oracleladder.report import console


def _text(*tables: Table) -> list[str]:
    out = io.StringIO()
    for t in tables:
        Console(file=out, width=100).print(t)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_the_funnel_table_counts_each_step_and_says_why() -> None:
    fates = ([Fate(pid=f"k{i}", stage=None, cause="kept", reason="") for i in range(5)]
             + [Fate(pid="r", stage="reference answer", cause="reference_answer", reason="no answer")]
             + [Fate(pid=f"c{i}", stage="compile", cause=c, reason="") for i, c in enumerate(["leak", "leak", "schema"])]
             + [Fate(pid="s1", stage="screen", cause="solved_directly", reason=""),
                Fate(pid="s2", stage="screen", cause="not_screened", reason=""),
                Fate(pid="f", stage="structural filter", cause="structural", reason="")])
    lines = _text(console.funnel_table(funnel("final", "openai/teacher", fates)))
    assert lines[0].strip() == "funnel of set 'final' (roadmaps: openai/teacher)"
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows == [["candidates", "12", "", ""],
                    ["valid reference answer", "11", "1", "unusable reference answer"],
                    ["compiled", "8", "3", "leak 2, schema 1"],
                    ["passed the screen", "6", "2", "solved_directly 1, not_screened 1"],
                    ["structural filter (final set)", "5", "1", "fewer than 2 tested milestones after the"],
                    ["", "", "", "leak rule"]]
    unscreened = _text(console.funnel_table(funnel("", "openai/teacher", fates[:5])))
    assert unscreened[0].strip() == "funnel of roadmaps openai/teacher, not screened"
    assert "│ candidates                    │ 5        │         │" in unscreened[4]


def test_a_raw_pools_funnel_has_the_raw_screen_before_compile_and_no_later_screen() -> None:
    fates = ([Fate(pid=f"k{i}", stage=None, cause="kept", reason="") for i in range(2)]
             + [Fate(pid="r", stage="reference answer", cause="reference_answer", reason="no answer")]
             + [Fate(pid=f"s{i}", stage="raw screen", cause=c, reason="")
                for i, c in enumerate(["solved_directly", "solved_directly", "incomplete"])]
             + [Fate(pid="c", stage="compile", cause="leak", reason="")])
    lines = _text(console.funnel_table(funnel("n", "openai/teacher", fates, raw=True)))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows == [["candidates", "7", "", ""], ["valid reference answer", "6", "1", "unusable reference answer"],
                    ["passed the raw screen (before compile)", "3", "3", "solved_directly 2, incomplete 1"],
                    ["compiled", "2", "1", "leak 1"], ["structural filter (final set)", "2", "0", ""]]


def test_the_reanchor_tables_and_their_summary() -> None:
    t = reanchor({"a": {"b": 3, "c": 1, "d": 5}, "b": {"a": 2, "c": 4, "d": 1}, "c": {"a": 2, "b": 2, "d": 6}},
                 {"a": 10, "b": 12, "c": 9})
    counts, taus = _text(console.anchor_counts_table(t)), _text(console.tau_table(t))
    assert "│ a (n=10)        │ 3 │ 1 │ 5 │ - │" in counts and "│ c (n=9)         │ 2 │ - │ 6 │ 2 │" in counts
    assert taus[-4:-1] == ["│ a (n=10) │ 1.00  │ -1.00 │ +1.00 │", "│ b (n=12) │ -1.00 │ 1.00  │ -1.00 │",
                           "│ c (n=9)  │ +1.00 │ -1.00 │ 1.00  │"]
    assert console.tau_summary(t) == "mean -0.33; 1 of 3 pairs positive"
    assert console.signed(None) == "n/a"


def test_missing_notices_name_only_the_students_with_verdicts_left_out() -> None:
    none = {"ungraded": {}, "failed": {}, "ungraded_total": 0, "failed_total": 0}
    two = {"ungraded": {"Stage 0": 1}, "failed": {"C1_direct": 2}, "ungraded_total": 1, "failed_total": 2}
    assert console.missing_notices({"x": two, "y": none}) == [
        "x: 1 ungraded rollouts and 2 failed jobs are in no table (report.md, Missing verdicts)"]
