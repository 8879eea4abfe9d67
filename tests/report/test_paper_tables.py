"""The paper's remaining tables (issue 30, item 4) on constructed students whose every number is worked
out by hand below: Tables 7, 8 and 48 (milestone types and answer schemas), Table 14 (Stage 0 and the
fingerprint of the families that pass the milestone test), Table 28 (per-condition recovery over tau),
Benjamini-Hochberg over the planned contrasts, and Tables 15 and 22 (one student at two budgets).

Student C, four families, K = 2 (as tests/report/test_many_students.py):
- p1 Roadmap-Needed (C2 2 of 2), milestones alone m0 [T,T]: passes the strict milestone test;
- p2 Roadmap-Needed (C2 2 of 2), m0 [F,F]: fails;
- p3 Answers-Needed (C3 1 of 2), m0 [T,F], m1 [F,F]: fails;
- p4 Answers-Needed (C3 1 of 2), m0 [T,T]: passes.
So 2 pass, the milestone solve rate is 3 of 5 tested milestones (60.0%), the fingerprint of all families
Direct/Roadmap-Needed/Answers-Needed/Unrecovered is 0/2/2/0 and of the passing ones 0/1/1/0.

The same student at a higher budget (D): p1 Direct (C1 1 of 2) m0 [T,T]; p2 Roadmap-Needed m0 [T,F] (now
passes: flipped); p3 Unrecovered with m0 [T,T], m1 [T,F] (now passes: flipped, a Composition-gap); p4
Answers-Needed m0 [T,T]. Passes 2 -> 4, 2 flipped, Composition-gap 0 -> 1; outcomes 0/2/2 (any 4) -> 1/1/1
(any 3); per family, Roadmap-Needed -> Direct (p1), Roadmap-Needed -> Roadmap-Needed (p2), Answers-Needed ->
Unrecovered (p3), Answers-Needed -> Answers-Needed (p4): 2 of 4 the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracleladder.ladder.outcomes import FamilyResults
from oracleladder.report.markdown import report_md
from oracleladder.report.plots import accuracy_figure, change_figure, specificity_figure, trajectory_figure
from oracleladder.report.report import ReportInput, write_report
from oracleladder.report.tables import Contrast, QFamily, adjust_planned, q_family, report_tables
from oracleladder.schemas import LADDER
from oracleladder.schemas.models import Family, Milestone
from oracleladder.schemas.rubric import RubricLabel
from oracleladder.schemas.types import AnswerSchema, MilestoneType

T, F = True, False
FF = [F, F]


def fam(pid: str, c1: list[bool], c2: list[bool], c3: list[bool], **stage0: list[bool]) -> FamilyResults:
    return FamilyResults(pid, dict(stage0), {"C1_direct": c1, "C2_descriptions": c2, "C3_gold_answers": c3})


C = [fam("p1", FF, [T, T], FF, m0=[T, T]), fam("p2", FF, [T, T], FF, m0=FF),
     fam("p3", FF, FF, [T, F], m0=[T, F], m1=FF), fam("p4", FF, FF, [T, F], m0=[T, T])]
D = [fam("p1", [T, F], FF, FF, m0=[T, T]), fam("p2", FF, [T, T], FF, m0=[T, F]),
     fam("p3", FF, FF, FF, m0=[T, T], m1=[T, F]), fam("p4", FF, FF, [T, F], m0=[T, T])]


def family(pid: str, *types: MilestoneType, schemas: tuple[AnswerSchema | None, ...] = ()) -> Family:
    ms = [Milestone(prompt=f"{pid} step {i}", answer=str(i), type=t,
                    answer_schema=schemas[i] if i < len(schemas) else None) for i, t in enumerate(types)]
    return Family(pid=pid, parent_prompt=f"problem {pid}", parent_answer="1", milestones=ms)


K, M, CO, I = MilestoneType.KEY_MOVE, MilestoneType.MODEL, MilestoneType.COMPUTE, MilestoneType.INTEGRATE  # noqa: E741 - the paper's letters
# tested milestones: p1 KEY_MOVE, MODEL (and its Integrate); p2 KEY_MOVE; p3 COMPUTE, KEY_MOVE; p4 MODEL
FAMILIES = [family("p1", K, M, I), family("p2", K), family("p3", CO, K), family("p4", M)]


def test_table14_fingerprint_of_the_passing_families() -> None:
    t = report_tables(ReportInput(students={"C": C})).students["C"]
    assert t.fingerprint_passing == {"Direct": 0, "Roadmap-Needed": 1, "Answers-Needed": 1, "Unrecovered": 0}
    r = report_tables(ReportInput(students={"C": C, "N": [fam("p1", FF, FF, FF)]}))
    md = report_md(r)
    assert "| C | 60.0% | 2 | 0/2/2/0 | 0/1/1/0 |" in md
    assert "| N | not run | not run | 0/0/0/1 | not run |" in md  # no Stage 0: never a zero
    assert r.model_dump()["students"]["N"]["fingerprint_passing"] is None  # report.json's form


def test_table28_recovery_per_condition_over_tau() -> None:
    r = report_tables(ReportInput(students={"C": C}))
    t = r.students["C"]
    # C2: p1, p2 2 of 2 -> 2 at tau 1 and 2, none above; C3: p3, p4 1 of 2 -> 2 at tau 1 only; C1: none
    assert t.recovery_by_tau["C2_descriptions"] == {"1": 2, "2": 2, "3": 0, "4": 0, "5": 0}
    assert t.recovery_by_tau["C3_gold_answers"] == {"1": 2, "2": 0, "3": 0, "4": 0, "5": 0}
    assert t.recovery_by_tau["C1_direct"] == {"1": 0, "2": 0, "3": 0, "4": 0, "5": 0}
    assert t.recovery_by_tau["C2_random"] is None
    md = report_md(r).split("(Table 28)")[1]
    assert "| C2 | 2 | 2 | 0 | 0 | 0 |" in md and "| C2-random | not run | not run |" in md


def test_benjamini_hochberg_over_the_planned_contrasts() -> None:
    # ten families: C2 solves each, C1, C2-random and C2-generic none, C3 and C3-mismatched each. So C2 against
    # C1, random and generic: 10 discordant of 10, p = 2 / 2**10 = 0.001953125 each; C3 against mismatched:
    # none discordant, p = 1. BH over the four: the three smallest q = 0.001953125 * 4 / 3, the last 1 * 4 / 4.
    conds = {"C1_direct": FF, "C2_descriptions": [T, T], "C2_random": FF, "C2_generic": FF,
             "C3_gold_answers": [T, T], "C3_mismatched": [T, T]}
    fams = [FamilyResults(f"p{i}", {}, dict(conds)) for i in range(10)]
    r = report_tables(ReportInput(students={"S": fams}))
    rows = r.students["S"].contrasts
    q = {c.contrast: c.p_bh for c in rows}
    assert [c.p_value for c in rows[:4]] == [0.001953125] * 3 + [1.0]
    assert q["C2 vs C1"] == q["C2 vs C2-random"] == q["C2 vs C2-generic"] == 0.001953125 * 4 / 3
    assert q["C3 vs C3-mismatched"] == 1.0
    assert q["C2-primitive vs C2-primitive-random"] is None  # not run: in no adjustment
    assert q["C3 vs C1"] is None  # not planned
    md = report_md(r)
    assert "| S | 0.0026 | 0.0026 | 0.0026 | 1 | not run |" in md
    assert "(q) over the 4 planned tests of 1 student together" in md


def test_benjamini_hochberg_over_the_papers_24_planned_tests() -> None:
    # Table 11 of the OracleLadder paper (Appendix E): per model, C2-correct vs C1, vs C2-random, vs C2-generic,
    # and C3-gold vs C3-mismatched, the exact p-values as printed (rounded). The paper prints no q-value; it says
    # BH at q = 0.05 over the 24 tests leaves every C2 contrast significant, and the three C3 ones at p = 0.144,
    # 0.324 and 0.701 non-significant. Worked by hand: 0.701 is the largest, its q = 0.701 * 24 / 24; 0.324 is
    # the 23rd, q = 0.324 * 24 / 23; 0.144 is the 22nd, q = 0.144 * 24 / 22.
    table11 = {"Qwen-base": [2.4e-4, 8.6e-9, 8.2e-5, 0.015],
               "OutcomeRL-2K step 180": [7.7e-4, 7.6e-4, 0.003, 0.144],
               "MilestoneRL-2K step 180": [0.001, 2.4e-7, 0.002, 0.005],
               "gpt-oss-20b": [0.003, 0.010, 0.011, 0.324],
               "Llama-3.3-70B-Inst.": [4.5e-10, 3.2e-10, 2e-6, 4.6e-4],
               "DeepSeek-V3.1": [4.2e-5, 9e-6, 0.006, 0.701]}
    rows = {m: [Contrast(contrast=name, a=a, b=b, planned=True, status="ok", n=354, p_value=p)
                for (name, a, b, _), p in zip(LADDER.contrasts[:4], ps)] for m, ps in table11.items()}
    q = {m: [c.p_bh for c in cs] for m, cs in adjust_planned(rows).items()}
    assert q_family(rows) == QFamily(tests=24, students=6)
    assert all(x < 0.05 for cs in q.values() for x in cs[:3])  # every C2 contrast stays significant
    assert q["OutcomeRL-2K step 180"][3] == pytest.approx(0.144 * 24 / 22)
    assert q["gpt-oss-20b"][3] == pytest.approx(0.324 * 24 / 23)
    assert q["DeepSeek-V3.1"][3] == pytest.approx(0.701)


def test_benjamini_hochberg_over_the_planned_tests_of_two_students() -> None:
    # A: the ten families above, p = 0.001953125 (C2 contrasts, each) and 1 (C3). B: six families that C2 and C3
    # solve and C1, C2-random, C2-generic and C3-mismatched do not: 6 discordant of 6, p = 2 / 2**6 = 0.03125 for
    # all four. One family of 8: sorted 3 x 0.001953125, 4 x 0.03125, 1; q of A's C2 contrasts 0.001953125 * 8 / 3,
    # of B's four 0.03125 * 8 / 7, of A's C3 1 * 8 / 8. (Each alone: A's 0.001953125 * 4 / 3, B's 0.03125.)
    a = {"C1_direct": FF, "C2_descriptions": [T, T], "C2_random": FF, "C2_generic": FF,
         "C3_gold_answers": [T, T], "C3_mismatched": [T, T]}
    b = a | {"C3_mismatched": FF}
    students = {"A": [FamilyResults(f"p{i}", {}, dict(a)) for i in range(10)],
                "B": [FamilyResults(f"p{i}", {}, dict(b)) for i in range(6)]}
    r = report_tables(ReportInput(students=students))
    q = {s: [c.p_bh for c in t.contrasts[:5]] for s, t in r.students.items()}
    assert q["A"][:4] == pytest.approx([0.001953125 * 8 / 3] * 3 + [1.0]) and q["A"][4] is None
    assert q["B"][:4] == pytest.approx([0.03125 * 8 / 7] * 4) and q["B"][4] is None
    assert r.meta.bh_family == QFamily(tests=8, students=2)
    assert r.model_dump()["meta"]["bh_family"] == {"tests": 8, "students": 2}  # report.json's form
    md = report_md(r)
    assert "Benjamini-Hochberg adjusted p (q) over the 8 planned tests of 2 students together" in md
    assert "| A | 0.00521 | 0.00521 | 0.00521 | 1 | not run |" in md
    assert "| B | 0.0357 | 0.0357 | 0.0357 | 0.0357 | not run |" in md


def test_tables7_8_48_milestone_types_and_answer_schemas() -> None:
    r = report_tables(ReportInput(students={"C": C}, families=FAMILIES))
    m = r.milestone_types
    assert (m.families, m.milestones, m.answers) == (4, 6, 7)
    assert {t: c for t, c in m.types.items() if c} == {"KEY_MOVE": 3, "MODEL": 2, "COMPUTE": 1}
    assert m.schemas is None  # no milestone states its schema, as in the release
    by = r.types_by_outcome["C"]
    assert by["Roadmap-Needed"].n == 2 and by["Answers-Needed"].n == 2 and by["Direct"].n == 0
    assert {t: c for t, c in by["Roadmap-Needed"].with_type.items() if c} == {"KEY_MOVE": 2, "MODEL": 1}
    assert {t: c for t, c in by["Answers-Needed"].with_type.items() if c} == {"KEY_MOVE": 1, "MODEL": 1, "COMPUTE": 1}
    md = report_md(r)
    assert "| KEY_MOVE | 3 | 50.0% |" in md and "| MODEL | 2 | 33.3% |" in md and "| COMPUTE | 1 | 16.7% |" in md
    assert "| Roadmap-Needed | 2 | 100% | 50% | 0% |" in md and "| Answers-Needed | 2 | 50% | 50% | 50% |" in md
    assert "| Direct | 0 | — |" in md
    assert "Table 48 (answer schemas): none of the set's 7 milestones states its answer schema" in md

    with_schemas = [family("p1", K, M, I, schemas=(AnswerSchema.NUMBER, AnswerSchema.EXPR)), *FAMILIES[1:]]
    r = report_tables(ReportInput(students={"C": C}, families=with_schemas))
    m = r.milestone_types
    assert {a: c for a, c in m.schemas.items() if c} == {"NUMBER": 1, "EXPR": 1} and m.schema_unknown == 5
    md = report_md(r)
    assert "| NUMBER | 1 | 14.3% |" in md and "| not stated | 5 | 71.4% |" in md
    no_families = report_md(report_tables(ReportInput(students={"C": C})))  # one line, no zeros
    assert "Tables 7, 8 and 48 (milestone types and answer schemas) read a roadmap set's milestones" in no_families


def test_tables15_22_one_student_at_two_budgets() -> None:
    cols = {"S@max_tokens=256": C, "S@max_tokens=512": D}
    budgets = {"S": (("S@max_tokens=256", 256), ("S@max_tokens=512", 512))}
    r = report_tables(ReportInput(students=cols, budgets=budgets))
    b = r.budgets["S"]
    assert (b.n_common, b.max_tokens) == (4, (256, 512))
    assert b.outcomes_low == {"Direct": 0, "Roadmap-Needed": 2, "Answers-Needed": 2, "Any probe": 4}
    assert b.outcomes_high == {"Direct": 1, "Roadmap-Needed": 1, "Answers-Needed": 1, "Any probe": 3}
    assert (b.pass_low, b.pass_high, b.pass_flipped, b.composition_low, b.composition_high) == (2, 4, 2, 0, 1)
    m = b.transitions
    assert m.labels == ["Direct", "Roadmap-Needed", "Answers-Needed", "Unrecovered"]
    assert {a: {c: n for c, n in row.items() if n} for a, row in m.counts.items() if any(row.values())} == {
        "Roadmap-Needed": {"Direct": 1, "Roadmap-Needed": 1}, "Answers-Needed": {"Answers-Needed": 1, "Unrecovered": 1}}
    assert (m.n, m.same) == (4, 2)
    assert r.model_dump()["budgets"]["S"]["transitions"]["counts"]["Answers-Needed"]["Unrecovered"] == 1
    md = report_md(r)
    assert "| S | 4 | 0 | 2 | 2 | 4 | 1 | 1 | 1 | 3 |" in md and "| S | 2 | 4 | 2 | 0 | 1 |" in md
    assert "Outcome transitions of S from max_tokens 256 (rows) to 512 (columns):" in md
    assert "| 256 \\ 512 | Direct | Roadmap-Needed | Answers-Needed | Unrecovered | Row total |" in md
    assert "| Roadmap-Needed | 1 | 1 | 0 | 0 | 2 |" in md and "| Answers-Needed | 0 | 0 | 1 | 1 | 2 |" in md
    assert "| Column total | 1 | 1 | 1 | 1 | 4 |" in md and "Same outcome: 2 of 4." in md
    assert "Tables 15 and 22 (Stage 0 and outcomes at two budgets) need a student" in \
        report_md(report_tables(ReportInput(students=cols)))


def test_table_42_at_two_budgets_side_by_side() -> None:
    # S at 4096 (L): p1-p3 Unrecovered with m0 solved alone (the composition gap), p4 Direct. At 16384 (H): p1 and
    # p4 in the gap, p2 and p3 Direct. The review (of L) labels p1 a verifier error, p2 and p3 clean; each budget
    # reads the same labels. L: 3 labeled, 1 flagged (33.3%), gap 3 of 4 (75.0%) -> 2 (50.0%); H: gap 2 of 4 (50.0%)
    # -> 1 (25.0%), p4 unlabeled (kept in the gap).
    gap = fam("p1", FF, FF, FF, m0=[T, T])
    low = [gap, fam("p2", FF, FF, FF, m0=[T, T]), fam("p3", FF, FF, FF, m0=[T, T]),
           fam("p4", [T, T], FF, FF, m0=[T, T])]
    high = [gap, fam("p2", [T, T], FF, FF, m0=[T, T]), fam("p3", [T, T], FF, FF, m0=[T, T]),
            fam("p4", FF, FF, FF, m0=[T, T])]
    labels = {"p1": RubricLabel(category="Verifier_Artifact", verifier_error=True, format_error=False, evidence=""),
              "p2": RubricLabel(category="Decomposition_Incomplete", verifier_error=False, format_error=False,
                                evidence=""),
              "p3": RubricLabel(category="Genuine_Composition", verifier_error=False, format_error=False, evidence="")}
    md = report_md(report_tables(ReportInput(students={"L": low, "H": high}, budgets={"S": (("L", 4096), ("H", 16384))},
                                             reviews={"L": labels, "H": labels}))).split("(Table 42)")[1]
    assert "| S | 4096 / 16384 | 3 | 1 | 33.3% | 75.0% | 50.0% | 50.0% | 25.0% | 1 |" in md
    one = report_md(report_tables(ReportInput(students={"L": low, "H": high}, reviews={"L": labels})))  # a review at one budget only
    assert "At two budgets" not in one


def test_figures_3_5_6_7_from_the_tables(tmp_path: Path) -> None:
    """C and D as above, C the base. Specificity (% of 4 families): C's C1 0, C2 2 (50%), C3 2 (50%), the
    controls not run. Accuracy: C's C1 0 of 8 rollouts, any probe 4 of 4; D's C1 1 of 8 (12.5%), any probe 3 of 4.
    Change of D against C: Direct +1, Roadmap-Needed -1, Answers-Needed -1, any probe -1. Trajectory in the
    order D, C: Direct 1, 0; Roadmap-Needed 1, 2; Answers-Needed 1, 2; Unrecovered 1, 0."""
    r = report_tables(ReportInput(students={"C": C, "D": D}, order=["D", "C"]))
    _, _, heights = specificity_figure(r)
    assert heights["C"] == {"C1_direct": 0.0, "C2_random": None, "C2_generic": None, "C2_descriptions": 50.0,
                            "C3_mismatched": None, "C3_gold_answers": 50.0}
    _, _, points = accuracy_figure(r)
    assert points == {"C": (0.0, 100.0), "D": (12.5, 75.0)}
    _, _, deltas = change_figure(r)
    assert deltas == {"D": {"Direct": 1, "Roadmap-Needed": -1, "Answers-Needed": -1, "Any probe": -1}}
    _, ax, stacks = trajectory_figure(r)
    assert stacks == {"Direct": [1, 0], "Roadmap-Needed": [1, 2], "Answers-Needed": [1, 2], "Unrecovered": [1, 0]}
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["D", "C"]
    write_report(ReportInput(students={"C": C, "D": D}, order=["D", "C"]), tmp_path)
    for name in ("taxonomy", "fingerprint", "specificity", "accuracy", "change", "trajectory"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    write_report(ReportInput(students={"C": C}), tmp_path / "one")  # one student: no change nor trajectory to draw
    assert not (tmp_path / "one" / "change.png").exists() and (tmp_path / "one" / "accuracy.png").exists()


def test_a_set_without_milestones_says_so_in_one_line() -> None:
    bare = [Family(pid="p1", parent_prompt="problem", parent_answer="1", milestones=[])]
    assert ("Tables 7, 8 and 48 (milestone types and answer schemas): the set (1 family) has no milestone."
            in report_md(report_tables(ReportInput(students={"C": C[:1]}, families=bare))))
