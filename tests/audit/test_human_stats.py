"""The human audit's bookkeeping on label lists built here, each value worked out by hand: Cohen's kappa,
the priority rule, the triage and its bounds; and the paper's own Table 39 and Table 40 (Appendix S)
reproduced from per-family labels that sum to its counts, and the automated review's agreement with them
(Appendix S.1: 69%, kappa 0.14)."""
from __future__ import annotations

from pathlib import Path

import pytest

from oracleladder.audit.human import (
    BEYOND_CAPABILITY as BC,
    CATEGORIES,
    DECOMPOSITION_INCOMPLETE as DI,
    GENUINE_COMPOSITION as GC,
    NOT_STANDALONE as NS,
    VERIFIER_ARTIFACT as VA,
    markdown,
    parse_priority,
    resolve,
    review_agreement,
    table39,
    triage,
    write_figure,
)
from oracleladder.report.stats import agreement
from oracleladder.schemas.rubric import RubricLabel


def test_agreement_and_kappa_by_hand() -> None:
    # 10 items, agree on 7; rater a: x 5, y 5; rater b: x 4, y 6. p_o = 0.7, p_e = (5*4 + 5*6) / 100 = 0.5
    a = ["x"] * 5 + ["y"] * 5
    b = ["x"] * 3 + ["y"] * 2 + ["x"] * 1 + ["y"] * 4
    assert agreement(a, b) == {"n": 10, "agree": 7, "raw": 0.7, "kappa": pytest.approx((0.7 - 0.5) / (1 - 0.5))}
    assert agreement(["x", "y"], ["y", "x"])["kappa"] == pytest.approx(-1.0)  # p_o 0, p_e 0.5


def test_the_priority_rule_favours_data_quality_and_takes_the_users_order() -> None:
    assert CATEGORIES == (VA, BC, NS, DI, GC)
    assert resolve(GC, DI) == DI and resolve(DI, VA) == VA and resolve(NS, BC) == BC and resolve(GC, GC) == GC
    mine = parse_priority("genuine composition, decomposition_incomplete,not-standalone,Beyond_Capability,verifier_artifact")
    assert mine == (GC, DI, NS, BC, VA)
    assert resolve(GC, DI, mine) == GC and resolve(DI, VA, mine) == DI
    with pytest.raises(ValueError, match="names each of"):
        parse_priority("Genuine_Composition,Verifier_Artifact")
    with pytest.raises(ValueError, match="not one of"):
        parse_priority("Genuine_Composition,Verifier_Artifact,Beyond_Capability,Not_Standalone,Maybe")


def test_triage_and_bounds_by_hand() -> None:
    labels = {"v1": VA, "v2": VA, "v3": VA, "d1": DI, "d2": DI, "d3": DI, "g1": GC, "b1": BC, "n1": NS}
    repairs = {"v1": "unlocked", "v2": "unrecovered", "v3": "not_applicable",
               "d1": "unlocked", "d2": "unrecovered", "d3": "not_applicable"}
    t = triage(labels, repairs)
    # artifact: v1, v3 (not applicable: the raters' reading stands), d1; composition-related: g1, d2, d3, v2
    assert (t["artifact"], t["verifier_repaired"], t["decomposition_repaired"], t["verifier_not_applicable"]) == (3, 1, 1, 1)
    assert (t["composition_or_unresolved"], t["genuine_composition"], t["decomposition_unrecovered"],
            t["verifier_unrecovered"]) == (4, 1, 2, 1)
    assert (t["beyond_capability"], t["not_standalone"], t["total"]) == (1, 1, 9)
    assert (t["verifier_attempted"], t["decomposition_attempted"]) == (2, 2)
    assert t["bounds"] == {"lower": 1, "middle": 4, "upper": 5}  # upper: 4 + the 1 leak-safe repair


def paper_labels() -> tuple[list[str], list[str]]:
    """Two raters' labels of 100 families as Appendix S tells them: agreed on 67 (12 VA, 2 BC, 1 NS,
    34 DI, 18 GC); the priority rule resolves the other 33, 14 to VA, 3 to BC and 16 to DI."""
    agreed = [VA] * 12 + [BC] * 2 + [NS] + [DI] * 34 + [GC] * 18
    pairs = ([(VA, DI)] * 6 + [(DI, VA)] * 5 + [(VA, GC)] * 2 + [(GC, VA)] * 1  # -> VA
             + [(BC, DI)] * 2 + [(DI, BC)] * 1  # -> BC
             + [(DI, GC)] * 8 + [(GC, DI)] * 8)  # -> DI
    return agreed + [a for a, _ in pairs], agreed + [b for _, b in pairs]


def test_the_papers_table_39_from_per_family_labels() -> None:
    a, b = paper_labels()
    ag = agreement(a, b)
    assert (ag["n"], ag["agree"]) == (100, 67)
    # marginals a: VA 20, BC 4, NS 1, DI 48, GC 27; b: VA 18, BC 3, NS 1, DI 50, GC 28
    p_e = (20 * 18 + 4 * 3 + 1 * 1 + 48 * 50 + 27 * 28) / 100 ** 2  # 0.3529
    assert ag["kappa"] == pytest.approx((0.67 - p_e) / (1 - p_e))
    assert round(ag["kappa"], 2) == 0.49  # the paper's inter-rater kappa
    resolved = {f"f{i}": resolve(x, y) for i, (x, y) in enumerate(zip(a, b))}
    assert table39(resolved) == {DI: 50, VA: 26, GC: 18, BC: 5, NS: 1}

    # the validation pass on 50 of them: 38 agree (76%); resolved VA 14, GC 10, BC 3, NS 1, DI 22 against the
    # validation's VA 17, GC 6, BC 2, NS 1, DI 24 (34% and 12%, as the paper says)
    primary = [VA] * 12 + [GC] * 5 + [BC] * 2 + [NS] + [DI] * 18 + [VA] * 2 + [GC] * 1 + [BC] + [GC] * 4 + [DI] * 3 + [DI]
    second = [VA] * 12 + [GC] * 5 + [BC] * 2 + [NS] + [DI] * 18 + [DI] * 2 + [VA] * 1 + [VA] + [DI] * 4 + [VA] * 3 + [GC]
    v = agreement(primary, second)
    assert (v["n"], v["agree"], v["raw"]) == (50, 38, 0.76)
    p_e = (14 * 17 + 10 * 6 + 3 * 2 + 1 * 1 + 22 * 24) / 50 ** 2  # 0.3332
    assert v["kappa"] == pytest.approx((0.76 - p_e) / (1 - p_e)) and round(v["kappa"], 2) == 0.64


def test_the_papers_table_40_and_figure_9(tmp_path: Path) -> None:
    a, b = paper_labels()
    resolved = {f"f{i}": resolve(x, y) for i, (x, y) in enumerate(zip(a, b))}
    # Appendix S: verifier repair 19 of 25 attempted unlocked (1 not applicable); leak-safe regeneration 17 of
    # the 45 families it could be made for unlocked (5 could not)
    outcomes = {VA: ["unlocked"] * 19 + ["unrecovered"] * 6 + ["not_applicable"],
                DI: ["unlocked"] * 17 + ["unrecovered"] * 28 + ["not_applicable"] * 5}
    repairs = {p: outcomes[c].pop() for p, c in resolved.items() if c in outcomes}
    t = triage(resolved, repairs)
    assert (t["artifact"], t["verifier_repaired"], t["decomposition_repaired"], t["verifier_not_applicable"]) == (37, 19, 17, 1)
    assert (t["composition_or_unresolved"], t["genuine_composition"], t["decomposition_unrecovered"],
            t["verifier_unrecovered"]) == (57, 18, 33, 6)
    assert (t["beyond_capability"], t["not_standalone"], t["total"]) == (5, 1, 100)
    assert (t["verifier_attempted"], t["decomposition_attempted"]) == (25, 45)
    assert t["bounds"] == {"lower": 18, "middle": 57, "upper": 74}  # the paper's 57 + 17 = 74
    result = {"student": "MilestoneRL-2K", "families": 100, "raters": ["a", "b"], "priority": list(CATEGORIES),
              "agreement": agreement(a, b), "resolved_disagreements": {VA: 14, BC: 3, DI: 16},
              "table39": table39(resolved), "validation": None, "triage": t}
    text = "\n".join(markdown(result))
    assert "| Decomposition incomplete | 50 | 50.0% | Regenerate, leak-safe filter | Yes |" in text
    assert "verifier-repair fixes (19/25 attempted verifier-artifact families unlocked) | 19 |" in text
    assert "| Composition-related or unresolved after repair | 57 |" in text
    assert "at most 57+17=74 (74.0%" in text
    write_figure(t, tmp_path / "figure9.png")
    assert (tmp_path / "figure9.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _label(category: str, flagged: bool) -> RubricLabel:
    return RubricLabel(category=category, verifier_error=flagged, format_error=False, evidence="")


def test_the_papers_review_agreement_from_per_family_labels() -> None:
    # Appendix S.1: on the 74 families both cover, the review and the authors give the same verifier or format
    # verdict for 51 (69%, kappa 0.14), and the review flags 6 of the 20 the authors labeled Verifier_Artifact.
    # So: 6 flagged by both, 14 by the authors alone, 51 - 6 = 45 by neither, 74 - 20 - 45 = 9 by the review alone.
    # Families the review left unreviewed (None) or never saw are not covered.
    human = [VA] * 6 + [VA] * 14 + [DI] * 5 + [GC] * 4 + [DI] * 30 + [GC] * 10 + [BC] * 5 + [VA, GC]
    review = ([_label(VA, True)] * 6 + [_label(DI, False)] * 14 + [_label(DI, True)] * 5 + [_label(GC, True)] * 4
              + [_label(DI, False)] * 30 + [_label(GC, False)] * 10 + [_label(BC, False)] * 5 + [None])
    resolved = {f"f{i}": c for i, c in enumerate(human)}
    r = review_agreement(resolved, {f"f{i}": label for i, label in enumerate(review)})
    assert (r["n"], r["agree"], r["human_flagged"], r["both_flagged"]) == (74, 51, 20, 6)
    # p_o = 51/74; p_e = (review flagged 15 * authors 20 + 59 * 54) / 74**2
    p_e = (15 * 20 + 59 * 54) / 74 ** 2
    assert r["kappa"] == pytest.approx((51 / 74 - p_e) / (1 - p_e))
    assert (round(100 * r["raw"]), round(r["kappa"], 2)) == (69, 0.14)
    text = "\n".join(markdown({"families": 76, "raters": ["a", "b"], "student": "S", "priority": list(CATEGORIES),
                               "agreement": agreement(human, human), "resolved_disagreements": {},
                               "table39": table39(resolved), "validation": None, "triage": None, "review": r}))
    assert ("on the 74 families both cover, the same verifier or format verdict for 51 (68.9%, Cohen's kappa 0.14); "
            "the review flags 6 of the 20 families the raters resolved to Verifier_Artifact.") in text
    assert review_agreement(resolved, {}) is None
