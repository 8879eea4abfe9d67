import json
from math import comb

import numpy as np

from oracleladder.ladder.outcomes import FamilyResults
from oracleladder.report.markdown import report_md
from oracleladder.report.report import ReportInput, summarize, write_report
from oracleladder.report.stats import bootstrap_ci
from oracleladder.report.tables import (
    bootstrap_shares,
    condition_counts,
    contrasts,
    pair,
    report_tables,
    stage0_stats,
    student_tables,
)

T, F = True, False
FF = [F, F]


def s1():
    """Hand-built student 1 (K=2): a Direct, b Roadmap-Needed/fails strict, c Answers-Needed, d Unrecovered/fails."""
    base = {"C2_random": FF, "C3_mismatched": FF}  # C2_generic not run
    return [
        FamilyResults("a", {"m0": [T, F], "m1": [F, T]},
                      {"C1_direct": [T, F], "C2_descriptions": [T, T], "C3_gold_answers": [T, T], **base, "C2_random": [T, F]}),
        FamilyResults("b", {"m0": [T, F], "m1": FF}, {"C1_direct": FF, "C2_descriptions": [T, F], "C3_gold_answers": FF, **base}),
        FamilyResults("c", {"m0": [T, T]}, {"C1_direct": FF, "C2_descriptions": FF, "C3_gold_answers": [F, T], **base}),
        FamilyResults("d", {"m0": FF}, {"C1_direct": FF, "C2_descriptions": FF, "C3_gold_answers": FF, **base}),
    ]


def s2():
    """Student 2, all six conditions: a Direct, b Direct, c Unrecovered (passes), d Roadmap-Needed (fails)."""
    ctl = {"C2_random": FF, "C2_generic": FF, "C3_mismatched": FF, "C3_gold_answers": FF}
    return [
        FamilyResults("a", {"m0": [T, T]}, {"C1_direct": [T, T], "C2_descriptions": FF, **ctl}),
        FamilyResults("b", {"m0": [T, F]}, {"C1_direct": [F, T], "C2_descriptions": FF, **ctl}),
        FamilyResults("c", {"m0": [T, F]}, {"C1_direct": FF, "C2_descriptions": FF, **ctl}),
        FamilyResults("d", {"m0": FF}, {"C1_direct": FF, "C2_descriptions": [T, F], **ctl}),
    ]


def test_summary_taxonomy_and_stage0():
    r = student_tables(s1(), tau=1)
    assert r.taxonomy == {"Direct": 1, "Roadmap-gap": 0, "Milestone-execution-gap": 1, "Composition-gap": 0,
                             "Missing-milestone-gap": 1, "Capability-gap": 1}
    # fraction test: b passes (1 of 2 milestones) -> Roadmap-gap instead of Missing-milestone-gap
    assert r.taxonomy_fraction["Roadmap-gap"] == 1 and r.taxonomy_fraction["Missing-milestone-gap"] == 0
    s0 = stage0_stats(s1())
    assert (s0.pass_strict, s0.pass_fraction) == (2, 3)
    assert s0.mean_tested_milestones == 1.5 and (s0.milestones_solved, s0.milestones_tested) == (4, 6)
    sm = r.summary
    assert sm.direct_accuracy == 1 / 8 and sm.solved_directly == 1 and sm.solved_any == 3
    assert sm.added_by_milestones == 2
    assert summarize(s1(), tau=1) == r.model_dump()  # the entry point: report.json's form of the same tables


def test_condition_counts_not_run():
    c = condition_counts(s1(), tau=1)
    assert c["C2_generic"] is None
    assert c["C1_direct"].solved == 1 and c["C2_descriptions"].solved == 2
    assert c["C3_gold_answers"].solved == 2 and c["C3_mismatched"].solved == 0
    assert c["C2_random"].solved == 1 and c["C2_descriptions"].per_rollout_rate == 3 / 8
    assert condition_counts(s1(), tau=2)["C2_descriptions"].solved == 1


def test_contrasts_against_binomial():
    # 7 families C2 solves and C1 does not, 1 the reverse, 2 both
    fams = [FamilyResults(str(i), {}, {"C1_direct": FF, "C2_descriptions": [T, F]}) for i in range(7)]
    fams += [FamilyResults("r", {}, {"C1_direct": [T, F], "C2_descriptions": FF})]
    fams += [FamilyResults(f"b{i}", {}, {"C1_direct": [T, T], "C2_descriptions": [T, F]}) for i in range(2)]
    rows = {r.contrast: r for r in contrasts(fams)}
    c = rows["C2 vs C1"]
    assert (c.only_a, c.only_b, c.delta, c.n) == (7, 1, 6, 10)
    assert abs(c.p_value - 2 * (comb(8, 0) + comb(8, 1)) / 2**8) < 1e-12
    assert rows["C2 vs C2-random"].status == "not run"
    assert rows["C3 vs C3-mismatched"].status == "not run"
    # report.json keeps a contrast not run to its name, conditions, status and n
    assert rows["C2 vs C2-random"].model_dump() == {"contrast": "C2 vs C2-random", "a": "C2_descriptions",
                                                    "b": "C2_random", "planned": True, "status": "not run", "n": 0}


def test_bootstrap_shares_seed():
    fams = s1()
    b = bootstrap_shares(fams, seed=42, n_resamples=1000)
    direct = bootstrap_ci([1, 0, 0, 0], n_resamples=1000, seed=42)
    assert b["Direct"] == direct and b["Direct"].seed == 42 and b["Direct"].point == 0.25
    assert b["Any probe"].point == 0.75 and b == bootstrap_shares(fams, seed=42, n_resamples=1000)
    assert b["Capability-gap"].point == 0.25


def test_pair_transitions():
    p = pair(s1(), s2(), n_resamples=200)
    c = p.outcome_transitions.counts
    assert c["Direct"]["Direct"] == 1 and c["Roadmap-Needed"]["Direct"] == 1
    assert c["Answers-Needed"]["Unrecovered"] == 1 and c["Unrecovered"]["Roadmap-Needed"] == 1
    assert p.outcome_transitions.same == 1 and p.n_common == 4
    # any-probe: s1 = a,b,c ; s2 = a,b,d
    rng = np.random.default_rng(42)
    idx = rng.integers(0, 4, size=(200, 4))
    x, y = np.array([1, 1, 1, 0.]), np.array([1, 1, 0, 1.])
    assert p.order_any_probe.a_gt_b == float(np.mean(x[idx].sum(1) > y[idx].sum(1)))


def test_write_report_two_students(tmp_path):
    res = write_report(ReportInput(students={"s1": s1(), "s2": s2()}, tau=1), tmp_path)
    for f in ("report.md", "report.json", "taxonomy.png", "fingerprint.png"):
        assert (tmp_path / f).stat().st_size > 0
    d = json.loads((tmp_path / "report.json").read_text())
    assert d["meta"]["seed"] == 42 and d["meta"]["n_resamples"] == 1000
    assert d["students"]["s1"]["conditions"]["C2_generic"] is None
    assert d["pairs"][0]["outcome_transitions"]["same"] == 1 and res["pairs"][0]["n_common"] == 4
    md = (tmp_path / "report.md").read_text()
    rows = [
        "| s1 | 4 | 12.5% | 25.0% | not run | 75.0% | 50.0% | not run |",    # Table 1 (Primitive-Needed not run)
        "| s2 | 4 | 37.5% | 50.0% | not run | 75.0% | 25.0% | not run |",
        "| s1 | 1 | 1 | not run | not run | not run | 2 | 0 | 2 | 3 |",       # Table 21
        "| s2 | 2 | 0 | 0 | not run | not run | 1 | 0 | 0 | 3 |",
        "| s1 | 1 | not run | 0 | 1 | 0 | 1 | 1 | 2 | 3 | 1.50 | 66.7% (4/6) |",  # Table 16 + Stage 0
        "| s2 | 2 | not run | 0 | 0 | 1 | 1 | 0 | 3 | 3 | 1.00 | 75.0% (3/4) |",
        "| 1 (default) | 1 | not run | 1 | 1 | 1 |",                          # Table 9, s1
        "| 2 | 0 | not run | 1 | 0 | 3 |",
        "| Direct | 1 | 0 | 0 | 0 | 1 |",                                     # Table 38
        "| Roadmap-Needed | 1 | 0 | 0 | 0 | 1 |",
        "| Answers-Needed | 0 | 0 | 0 | 1 | 1 |",
        "| Unrecovered | 0 | 1 | 0 | 0 | 1 |",
        "| Column total | 2 | 1 | 0 | 1 | 4 |",
    ]
    for row in rows:
        assert row in md, row
    assert "seed 42" in md and "1000 resamples" in md
    assert "s1: not run: C2-generic." in md
    assert "| s1 | +1 (1/0), p = 1, n = 4 | +1 (1/0), p = 1, n = 4 | not run | +2 (2/0), p = 0.5, n = 4 |" in md


def test_write_report_one_student(tmp_path):
    res = write_report(ReportInput(students={"only": s1()}), tmp_path)
    assert res["pairs"] == [] and (tmp_path / "taxonomy.png").exists()
    assert "Table 38" not in (tmp_path / "report.md").read_text()


# ------------------------------------------------------------- runs that are missing, and the plots

def _no_stage0():
    """s2 without its Stage 0 verdicts: only the Direct families (a, b) can be labelled."""
    return [FamilyResults(f.pid, {}, f.ladder) for f in s2()]


def test_known_outcome_and_gap_need_the_runs():
    from oracleladder.ladder.outcomes import Gap, Outcome
    from oracleladder.report.report import known_gap, known_outcome

    c1_only = FamilyResults("x", {"m0": [T, T]}, {"C1_direct": FF})
    assert known_outcome(c1_only) is None and known_gap(c1_only) is None  # C2 not run: unknown, not Unrecovered
    assert known_outcome(FamilyResults("y", {}, {"C1_direct": [F, T]})) is Outcome.DIRECT
    assert known_gap(FamilyResults("y", {}, {"C1_direct": [F, T]})) is Gap.DIRECT  # Direct needs no Stage 0
    full = {"C1_direct": FF, "C2_descriptions": FF, "C3_gold_answers": FF}
    assert known_outcome(FamilyResults("z", {}, full)) is Outcome.UNRECOVERED
    assert known_gap(FamilyResults("z", {}, full)) is None  # no Stage 0: composition or capability unknown
    assert known_gap(FamilyResults("z", {"m0": [T, F]}, full)) is Gap.COMPOSITION


def test_stage0_not_run_is_not_a_zero():
    r = student_tables(_no_stage0())
    assert r.taxonomy["Direct"] == 2 and r.taxonomy_not_classified == 2
    assert all(v is None for g, v in r.taxonomy.items() if g != "Direct")  # not run, never zero
    assert "Capability-gap" not in r.bootstrap and "Direct" in r.bootstrap
    both = report_tables(ReportInput(students={"s1": s1(), "s2": _no_stage0()}))
    assert both.model_dump()["pairs"][0]["gap_transitions"] is None  # report.json's form
    md = report_md(both)
    assert "Taxonomy transitions s1 -> s2: not run (Stage 0 is missing for s2 on the common families)." in md
    ci_row = next(line for line in md.splitlines() if line.startswith("| s2 | 50.0% ["))
    assert ci_row.endswith("| not run | not run | not run | not run | not run |")


def test_partial_ladder_noted_and_unlabelled():
    fams = s2()[:3] + [FamilyResults("e", {"m0": [T, T]}, {"C1_direct": FF})]  # e: C2, C3 never run
    r = student_tables(fams)
    assert r.outcome_undetermined == 1 and r.outcomes["Unrecovered"] == 1  # e is Not determined (issue 43)
    assert r.outcomes["Not determined"] == 1 and r.summary.solved_any == 2  # a rung not run solves nothing
    assert r.outcomes_known["Unrecovered"] == 1 and r.taxonomy_not_classified == 1
    md = report_md(report_tables(ReportInput(students={"p": fams})))
    assert "- p: 1 of 4 families lack a C1-C3 run" in md
    assert "| Not classified |" in md.splitlines()[md.splitlines().index(
        "## Reasoning-gap taxonomy (Table 16, strict milestone test, tau = 1)") + 2]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_plots_order_hatching_and_legends_outside():
    from oracleladder.ladder.outcomes import Gap, Outcome
    from oracleladder.report.plots import fingerprint_figure, taxonomy_figure

    fams = s2()[:3] + [FamilyResults("e", {"m0": [T, T]}, {"C1_direct": FF})]
    res = report_tables(ReportInput(students={"s1": s1(), "no stage 0": _no_stage0(), "partial": fams}))
    fig, ax, legend, drawn = taxonomy_figure(res)
    # Direct once, then the five gaps in Table 16 order, then the hatched unlabelled families
    assert [k for k, _ in drawn] == [g.value for g in Gap if g is not Gap.PRIMITIVE] + [None]  # C2-primitive not run
    assert dict(drawn)[None] == [0, 2, 1] and dict(drawn)["Direct"] == [1, 2, 2]
    assert all(sum(c[i] for _, c in drawn) == n for i, n in enumerate((4, 4, 4)))  # every family drawn once
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert not _overlap(legend.get_window_extent(r), ax.get_window_extent(r))

    fig, ax, legend, drawn = fingerprint_figure(res)
    assert [k for k, _ in drawn] == [o.value for o in Outcome if o is not Outcome.PRIMITIVE_NEEDED] + [None]
    assert dict(drawn)[None] == [0, 0, 1] and dict(drawn)["Unrecovered"] == [1, 1, 1]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert not _overlap(legend.get_window_extent(r), ax.get_tightbbox(r))

    # nothing missing: no hatched segment and no legend entry for it
    fig, _, legend, drawn = taxonomy_figure(report_tables(ReportInput(students={"s1": s1()})))
    assert None not in dict(drawn) and len(legend.get_texts()) == 6


def test_report_without_families_or_with_many_students(tmp_path):
    write_report(ReportInput(students={"nothing": []}), tmp_path / "empty")
    md = (tmp_path / "empty" / "report.md").read_text()
    assert "| nothing | not run | not run | not run | not run | not run | not run | not run |" in md
    many = {f"provider/student-number-{i}": s1() for i in range(9)}
    write_report(ReportInput(students=many), tmp_path / "many")
    assert (tmp_path / "many" / "taxonomy.png").stat().st_size > 0
