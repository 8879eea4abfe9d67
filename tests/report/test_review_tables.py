"""Table 42 (`review_row`) and the leak residual (`leak_residual`) on families made here, counted by hand."""

from __future__ import annotations

import pytest

from oracleladder.ladder.outcomes import FamilyResults
from oracleladder.report.tables import leak_residual, review_row
from oracleladder.schemas.rubric import CATEGORIES, RubricLabel

F, T = False, True


def _family(pid: str, c1: bool, c3: bool) -> FamilyResults:
    """Its one milestone solved alone; C2 fails; C1 and C3 as given."""
    return FamilyResults(pid, stage0={"m0": [T, F]},
                         ladder={"C1_direct": [c1, F], "C2_descriptions": [F, F], "C3_gold_answers": [c3, F]})


def _label(category: str, verifier: bool = False, fmt: bool = False) -> RubricLabel:
    return RubricLabel(category=category, verifier_error=verifier, format_error=fmt, evidence="")


# three composition-gap families (g1-g3), one Direct (d), one Answers-Needed (a)
FAMS = [_family("g1", F, F), _family("g2", F, F), _family("g3", F, F), _family("d", T, F), _family("a", F, T)]


def test_table_42_removes_the_flagged_gap_families_and_keeps_the_unlabeled() -> None:
    labels = {"g1": _label("Verifier_Artifact", verifier=True), "g2": None, "g3": _label("Genuine_Composition"),
              "a": _label("Not_Standalone", fmt=True)}  # "a" is not in the gap: not counted
    row = review_row(FAMS, labels)
    assert (row.families, row.gap, row.labeled, row.unlabeled, row.flagged) == (5, 3, 2, 1, 1)
    assert (row.flagged_share, row.before, row.after) == (pytest.approx(1 / 2), pytest.approx(3 / 5),
                                                          pytest.approx(2 / 5))
    assert row.categories == {c: int(c in ("Verifier_Artifact", "Genuine_Composition")) for c in CATEGORIES}
    assert row.categories_unflagged == {c: int(c == "Genuine_Composition") for c in CATEGORIES}
    empty = review_row(FAMS, {})
    assert (empty.labeled, empty.unlabeled, empty.flagged_share, empty.after) == (0, 3, None, pytest.approx(3 / 5))


def test_the_leak_residual_counts_c3_only_solves_on_leaking_families() -> None:
    residual = leak_residual(FAMS, {"a": "trivial", "g1": "strict"})  # g1 leaks, but C3 does not solve it
    assert residual is not None
    assert (residual.c3_only, residual.leaking, residual.pids, residual.by_level) == (1, 1, ["a"], {"trivial": 1})
    no_c3 = [FamilyResults(f.pid, f.stage0, {c: r for c, r in f.ladder.items() if c != "C3_gold_answers"})
             for f in FAMS]
    assert leak_residual(no_c3, {"a": "trivial"}) is None
