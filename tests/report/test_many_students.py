"""Tables for any number of students (issue 30, item 3) and the per-family rows (item 2), on three
constructed students whose every number is worked out by hand below.

Four families, K = 2 per condition, C1-C3 run on each:

- A solves every parent directly (C1 1 of 2): Direct x4; any-probe 4, direct 4.
- B solves none (Unrecovered x4); its milestones alone: p1 [T,F], p2 [F,F], p3 [T,T], p4 [F,F], so
  p1 and p3 are Composition-gap, p2 and p4 Capability-gap; any-probe 0, direct 0.
- C: p1 and p2 Roadmap-Needed (C2 2 of 2), p3 and p4 Answers-Needed (C3 1 of 2); its milestones
  alone: p1 [T,T] (Roadmap-gap), p2 [F,F] (Missing-milestone-gap), p3 m0 [T,F] and m1 [F,F] (strict
  test failed: Missing-milestone-gap; fraction test, 1 of 2 solved, passed: Milestone-execution-gap),
  p4 [T,T] (Milestone-execution-gap); any-probe 4, direct 0.

Every resample of the families gives A 4 and C 4 any-probe solves and B 0, so Table 13 reads 1.000 for
A and C over B, 0.000 the other way, and 0.000 both ways between A and C (a tie counts for neither);
the ranks are A 1 [1, 1], C 1 [1, 1] (ties share the better rank) and B 3 [3, 3]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.ladder.outcomes import FamilyResults
from oracleladder.report.markdown import report_md
from oracleladder.report.report import ReportInput, write_report
from oracleladder.report.tables import report_tables

T, F = True, False
FF = [F, F]


def fam(pid: str, c1: list[bool], c2: list[bool], c3: list[bool], **stage0: list[bool]) -> FamilyResults:
    return FamilyResults(pid, dict(stage0), {"C1_direct": c1, "C2_descriptions": c2, "C3_gold_answers": c3})


A = [fam(p, [T, F], FF, FF, m0=[T, T]) for p in ("p1", "p2", "p3", "p4")]
B = [fam("p1", FF, FF, FF, m0=[T, F]), fam("p2", FF, FF, FF, m0=FF), fam("p3", FF, FF, FF, m0=[T, T]),
     fam("p4", FF, FF, FF, m0=FF)]
C = [fam("p1", FF, [T, T], FF, m0=[T, T]), fam("p2", FF, [T, T], FF, m0=FF),
     fam("p3", FF, FF, [T, F], m0=[T, F], m1=FF), fam("p4", FF, FF, [T, F], m0=[T, T])]


@pytest.fixture(scope="module")
def abc_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of A, B and C as `write_report` writes it (its plots too), once for the tests that read it."""
    out = tmp_path_factory.mktemp("abc")
    write_report(ReportInput(students={"A": A, "B": B, "C": C}), out)
    return out


def test_table13_has_every_pair_of_three_students() -> None:
    r = report_tables(ReportInput(students={"A": A, "B": B, "C": C}))
    assert [(p.a, p.b) for p in r.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    ab, ac, bc = r.pairs
    assert (ab.order_any_probe.a_gt_b, ab.order_any_probe.b_gt_a) == (1.0, 0.0)
    assert (ac.order_any_probe.a_gt_b, ac.order_any_probe.b_gt_a) == (0.0, 0.0)  # a tie in every resample
    assert (bc.order_any_probe.a_gt_b, bc.order_any_probe.b_gt_a) == (0.0, 1.0)
    assert (ac.order_direct.a_gt_b, bc.order_direct.a_gt_b, bc.order_direct.b_gt_a) == (1.0, 0.0, 0.0)
    assert (ab.mcnemar_any_probe.only_a, ab.mcnemar_any_probe.only_b) == (4, 0)


def test_table12_ranks_and_counts(abc_report: Path) -> None:
    r = report_tables(ReportInput(students={"A": A, "B": B, "C": C}))
    assert {s: (x.any_probe.point, x.any_probe.lo, x.any_probe.hi) for s, x in r.ranks.items()} == {
        "A": (1, 1, 1), "B": (3, 3, 3), "C": (1, 1, 1)}
    md = (abc_report / "report.md").read_text()
    for row in ("| A | 4 | 4.0 [4, 4] | 4.0 [4, 4] | 1 [1, 1] |", "| B | 4 | 0.0 [0, 0] | 0.0 [0, 0] | 3 [3, 3] |",
                "| C | 4 | 0.0 [0, 0] | 4.0 [4, 4] | 1 [1, 1] |"):
        assert row in md, row
    for row in ("| Any-probe count | A | B | C |", "| A | — | 1.000 | 0.000 |", "| B | 0.000 | — | 0.000 |",
                "| C | 0.000 | 1.000 | — |"):
        assert row in md, row


def test_table38_and_table18_against_a_base() -> None:
    tables = report_tables(ReportInput(students={"A": A, "B": B, "C": C}, base="B"))  # what report.json holds
    res, md = tables.model_dump(), report_md(tables)
    assert res["meta"]["base"] == "B"
    # B -> A: every Unrecovered family of B is Direct for A (read from the stored pair A, B, turned round)
    a_part = md.split("## Outcome transitions B -> A (Table 38, 4 common families)")[1].split("## ")[0]
    assert "| Unrecovered | 4 | 0 | 0 | 0 | 4 |" in a_part and "| Column total | 4 | 0 | 0 | 0 | 4 |" in a_part
    c_part = md.split("## Outcome transitions B -> C (Table 38, 4 common families)")[1].split("## ")[0]
    assert "| Unrecovered | 0 | 2 | 2 | 0 | 4 |" in c_part
    # the five-way labels: p1 Composition -> Roadmap, p3 Composition -> Missing-milestone,
    # p2 Capability -> Missing-milestone, p4 Capability -> Milestone-execution
    gaps = c_part.split("Taxonomy transitions B -> C:")[1]
    assert "| Composition-gap | 0 | 1 | 0 | 0 | 1 | 0 | 2 |" in gaps
    assert "| Capability-gap | 0 | 0 | 1 | 0 | 1 | 0 | 2 |" in gaps
    assert "Same label: 0 of 4." in gaps
    assert res["changes"] == {
        "A": {"n_common": 4, "base": {"Direct": 0, "Roadmap-Needed": 0, "Answers-Needed": 0, "Any probe": 0},
              "counts": {"Direct": 4, "Roadmap-Needed": 0, "Answers-Needed": 0, "Any probe": 4},
              "delta": {"Direct": 4, "Roadmap-Needed": 0, "Answers-Needed": 0, "Any probe": 4}},
        "C": {"n_common": 4, "base": {"Direct": 0, "Roadmap-Needed": 0, "Answers-Needed": 0, "Any probe": 0},
              "counts": {"Direct": 0, "Roadmap-Needed": 2, "Answers-Needed": 2, "Any probe": 4},
              "delta": {"Direct": 0, "Roadmap-Needed": 2, "Answers-Needed": 2, "Any probe": 4}}}
    assert "| C | 4 | 0 (+0) | 2 (+2) | 2 (+2) | 4 (+4) |" in md
    assert "## Outcome transitions A -> C" not in md  # transitions read from the base only


def test_one_student_says_what_the_pairwise_tables_need() -> None:
    tables = report_tables(ReportInput(students={"A": A}))
    res, md = tables.model_dump(), report_md(tables)
    assert res["pairs"] == [] and res["ranks"] == {} and res["changes"] == {}
    assert "Tables 13, 18 and 38 (pairwise ordering, change against a base, transitions) need two or more " \
           "students." in md
    assert "Any-probe rank: needs two or more students with common families." in md


def test_report_json_carries_each_family(abc_report: Path) -> None:
    rows = {r["pid"]: r for r in json.loads((abc_report / "report.json").read_text())["students"]["C"]["families"]}
    assert rows["p3"] == {
        "pid": "p3", "outcome": "Answers-Needed", "outcome_known": "Answers-Needed",
        "milestone_test_strict": False, "milestone_test_fraction": True,
        "gap": "Missing-milestone-gap", "gap_fraction": "Milestone-execution-gap",
        "conditions": {"C1_direct": {"n_correct": 0, "k": 2}, "C2_descriptions": {"n_correct": 0, "k": 2},
                       "C3_gold_answers": {"n_correct": 1, "k": 2}},
        "milestones": {"m0": {"n_correct": 1, "k": 2}, "m1": {"n_correct": 0, "k": 2}}}
    assert rows["p1"]["gap"] == "Roadmap-gap" and rows["p2"]["gap"] == "Missing-milestone-gap"
    # no Stage 0: the milestone tests and the gap are not known (None), the outcome is
    no_stage0 = report_tables(ReportInput(students={"X": [FamilyResults("q", {}, {"C1_direct": FF, "C2_descriptions": [T, F]}),
                                     FamilyResults("r", {}, {"C1_direct": FF})]}))
    q, r = no_stage0.students["X"].families
    assert (q.outcome, q.outcome_known, q.milestone_test_strict, q.gap) == ("Roadmap-Needed", "Roadmap-Needed",
                                                                           None, None)
    # C2 not run: the outcome is not known, and every table says so (issue 43)
    assert (r.outcome, r.outcome_known, r.model_dump()["conditions"]) == ("Not determined", None,
                                                                       {"C1_direct": {"n_correct": 0, "k": 2}})
