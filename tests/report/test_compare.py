import json

from oracleladder.ladder.outcomes import FamilyResults
from oracleladder.report.compare import compare, write_compare
from oracleladder.schemas.models import Family, Milestone
from oracleladder.schemas.types import MilestoneType as MT


def ms(answer, t=MT.COMPUTE):
    return Milestone(prompt="q", answer=answer, type=t)


def fam(pid, milestones, integrate=None):
    return Family(pid=pid, parent_prompt="P", parent_answer="1", milestones=milestones, integrate=integrate)


def atomic(s):
    return " and " not in s


def h(n, k=4):
    return [True] * n + [False] * (k - n)


def test_structure_table32():
    a = [fam("p1", [ms("12"), ms("x+1", MT.LEMMA)], ms("5", MT.INTEGRATE)), fam("p2", [ms("3")]), fam("p3", [ms("9")])]
    b = [fam("p1", [ms("12"), ms("a = 4 and b = 5"), ms("7", MT.SANITY)], ms("5", MT.INTEGRATE)),
         fam("p2", [ms("y=2x", MT.MODEL), ms("10")])]
    r = [FamilyResults(p, {"m0": [True]}, {"C2_descriptions": h(1), "C3_gold_answers": h(1)}) for p in ("p1", "p2", "p3")]
    res = compare(a, b, r, r[:2], is_atomic=atomic, k=4)
    assert res["pids"] == ["p1", "p2"] and res["dropped"]["a_only"] == ["p3"]
    sa, sb = res["structure"]["a"], res["structure"]["b"]
    assert sa["milestones_per_family"] == 2.0 and sa["tested_per_family"] == 1.5
    assert sa["type_shares"]["COMPUTE"] == 0.5 and sa["type_shares"]["LEMMA"] == 0.25
    assert sa["type_shares"]["INTEGRATE"] == 0.25 and sa["atomic_share"] == 1.0 and sa["median_gold_length"] == 2
    assert sb["milestones_per_family"] == 3.0 and sb["tested_per_family"] == 2.5
    assert sb["type_counts"]["COMPUTE"] == 3 and abs(sb["type_shares"]["INTEGRATE"] - 1 / 6) < 1e-12
    assert sb["atomic_share"] == 0.8 and sb["median_gold_length"] == 2


def five():
    """Five families, K=4. (C2 hits A/B, C3 hits A/B): q1 1/0,2/3  q2 3/2,0/1  q3 0/3,2/0  q4 0/0,0/0  q5 2/2,1/1."""
    hits = {"q1": (1, 0, 2, 3), "q2": (3, 2, 0, 1), "q3": (0, 3, 2, 0), "q4": (0, 0, 0, 0), "q5": (2, 2, 1, 1)}
    c1 = {"q5": (1, 2)}
    s0a = {"q1": [[True]], "q2": [[True]], "q3": [[False]], "q4": [[True]], "q5": [[True]]}
    s0b = {"q1": [[True], [False]], "q2": [[True], [True]], "q3": [[False], [False]],
           "q4": [[True], [False]], "q5": [[False], [False]]}
    ra, rb = [], []
    for p, (c2a, c2b, c3a, c3b) in hits.items():
        d1a, d1b = c1.get(p, (0, 0))
        ra.append(FamilyResults(p, {f"m{i}": r for i, r in enumerate(s0a[p])},
                                {"C1_direct": h(d1a), "C2_descriptions": h(c2a), "C3_gold_answers": h(c3a)}))
        rb.append(FamilyResults(p, {f"m{i}": r for i, r in enumerate(s0b[p])},
                                {"C1_direct": h(d1b), "C2_descriptions": h(c2b), "C3_gold_answers": h(c3b)}))
    fa = [fam(p, [ms("1")]) for p in hits]
    fb = [fam(p, [ms("1"), ms("2")]) for p in hits]
    return fa, fb, ra, rb


def test_agreement_table33():
    res = compare(*five(), is_atomic=atomic, k=4)
    c2, c3, both = res["agreement"]["C2"], res["agreement"]["C3"], res["agreement"]["both"]
    assert (c2["same"], c2["n"], c2["disagree"], c2["disagree_1_vs_0"]) == (3, 5, 2, 1)
    assert (c2["recovered_a"], c2["recovered_b"]) == (3, 3) and c2["same_share"] == 0.6
    assert (c3["same"], c3["disagree"], c3["disagree_1_vs_0"]) == (3, 2, 1)
    assert (c3["recovered_a"], c3["recovered_b"]) == (3, 3)
    assert (both["same"], both["n"]) == (2, 5)
    assert res["per_attempt"]["a"]["C2"] == 6 / 20


def test_five_way_table34():
    fw = compare(*five(), is_atomic=atomic, k=4)["five_way"]
    assert fw["strict"]["same"] == 3 and fw["fraction"]["same"] == 4
    assert (fw["strict"]["pass_a"], fw["strict"]["pass_b"]) == (4, 1)
    assert (fw["fraction"]["pass_a"], fw["fraction"]["pass_b"]) == (4, 3)
    rows = {(r["a"], r["b"]): (r["strict"], r["fraction"]) for r in fw["rows"]}
    assert rows == {
        ("Direct", "Direct"): (1, 1),
        ("Roadmap-gap", "Roadmap-gap"): (1, 1),
        ("Roadmap-gap", "Milestone-execution-gap"): (0, 1),
        ("Roadmap-gap", "Missing-milestone-gap"): (1, 0),
        ("Composition-gap", "Composition-gap"): (0, 1),
        ("Composition-gap", "Capability-gap"): (1, 0),
        ("Missing-milestone-gap", "Missing-milestone-gap"): (1, 1),
    }


def test_write_compare(tmp_path):
    res = compare(*five(), is_atomic=atomic, k=4)
    write_compare(res, tmp_path, "released", "inkling")
    d = json.loads((tmp_path / "compare.json").read_text())
    assert d["names"] == ["released", "inkling"] and d["n"] == 5
    md = (tmp_path / "compare.md").read_text()
    for row in ("| Same C2 outcome | 3 of 5 (60%) |", "| Same C3 outcome | 3 of 5 (60%) |",
                "| Same C2 and C3 outcomes | 2 of 5 (40%) |",
                "| Disagreements at 1 vs. 0 of 4 (C2, C3) | 1 of 2, 1 of 2 |",
                "| Families recovered under C2 | 3 / 3 |",
                "| Composition-gap | Capability-gap | 1 | 0 |",
                "| Families with the same label |  | 3 | 4 |",
                "| Families passing the milestone test (released / inkling) |  | 4 / 1 | 4 / 3 |",
                "| Tested milestones per family | 1.0 | 2.0 |"):
        assert row in md, row


def test_compare_not_run():
    fa, fb, ra, rb = five()
    for r in rb:
        del r.ladder["C3_gold_answers"]
    res = compare(fa, fb, ra, rb, is_atomic=atomic, k=4)
    assert res["agreement"]["C3"]["status"] == "not run" and res["agreement"]["both"]["status"] == "not run"
    assert res["agreement"]["C2"]["same"] == 3


def test_write_compare_names_the_student_and_explains_missing_integrate(tmp_path):
    res = compare(*five(), is_atomic=atomic, k=4)
    write_compare(res, tmp_path, "released", "inkling", student="openai/gpt-oss-20b")
    md = (tmp_path / "compare.md").read_text()
    assert md.startswith("# Roadmap comparison: released vs inkling (student openai/gpt-oss-20b)")
    assert json.loads((tmp_path / "compare.json").read_text())["student"] == "openai/gpt-oss-20b"
    with_integrate = res["structure"]["a"]["families_with_integrate"], res["structure"]["b"]["families_with_integrate"]
    bare = [nm for nm, w in zip(("released", "inkling"), with_integrate) if not w]
    assert (f"{' and '.join(bare)}: no INTEGRATE step" in md) == bool(bare)
