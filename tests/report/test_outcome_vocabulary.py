"""One outcome per family (issue 43, item 6): the one function that decides it, `outcome_label`. A family C1
fails is "Not determined" while a rung that could recover it was not run, never Unrecovered; every
surface prints its value (the outcome cells of tests/report/test_every_surface.py)."""

from __future__ import annotations

from oracleladder.ladder.outcomes import NOT_DETERMINED, FamilyResults, outcome_label


def test_the_one_rule() -> None:
    failed = {"C1_direct": [False, False]}
    assert outcome_label(FamilyResults("p", ladder=failed)) == NOT_DETERMINED
    assert outcome_label(FamilyResults("p", ladder={**failed, "C2_descriptions": [False]})) == NOT_DETERMINED
    assert outcome_label(FamilyResults("p", ladder={**failed, "C2_descriptions": [True]})) == "Roadmap-Needed"
    every = {**failed, "C2_descriptions": [False], "C3_gold_answers": [False]}
    assert outcome_label(FamilyResults("p", ladder=every)) == "Unrecovered"
    assert outcome_label(FamilyResults("p", ladder={"C1_direct": [False, True]})) == "Direct"
