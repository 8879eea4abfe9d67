"""Milestone answers in the models' own solutions (paper Appendix Q, Table 35): the containment
test, the cross-problem control and the statement-novel restriction, on a hand-built example with
hand-computed rates, and on a real run of the embedded model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.audit.roadmap import contains
from oracleladder.cli import app
from oracleladder.demo import DEMO_FAMILIES
from oracleladder.schemas import Family, Milestone, Provenance, Rollout, Verdict
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.types import Label, MilestoneType
from oracleladder.store import Store


def _family(pid: str, statement: str, *golds: str) -> Family:
    milestones = [Milestone(prompt=f"step {i}", answer=g, type=MilestoneType.COMPUTE) for i, g in enumerate(golds)]
    integrate = Milestone(prompt="combine", answer="0", type=MilestoneType.INTEGRATE)
    return Family(pid=pid, parent_prompt=statement, parent_answer="0", milestones=[*milestones, integrate])


FAMILIES = [
    _family("A", "Let n = 12. Find the sum of the digits of n squared.", "144", "12"),
    _family("B", "Compute the area of a circle of radius 3.", "9\\pi", "\\frac{1}{2}"),
    _family("C", "Solve for y: y + 5 = 20.", "15"),
]
ATTEMPTS = {
    "A": ["n^2 = 144, digits sum to 9. \\boxed{9}", "We have n = 12, so n^2 = 140. \\boxed{5}"],
    "B": ["Area = 9\\pi. \\boxed{9 \\pi}", "Half of it: 0.5 \\cdot 9\\pi, so \\boxed{4.5\\pi}"],
    "C": ["y = 20 - 5 = 15. \\boxed{15}", "y = 144 / 12 = 12. \\boxed{12}"],
}
# By hand. Golds: 144, 12 (in A's statement), 9\pi, 1/2, 15; novel: all but 12.
# Own (gold x its 2 attempts, 10 pairs): 144 A1; 12 A2; 9\pi B1 B2; 1/2 B2 (as 0.5); 15 C1 -> 6.
# Control (gold x the 4 other attempts, 20 pairs): 144 C2; 12 C2 -> 2.
# Novel: own 5 of 8 (12 out), control 1 of 16 (144 in C2).


def test_containment_reads_numbers_by_value_and_the_rest_verbatim_after_normalization() -> None:
    assert contains("so x = 0.5.", "\\frac{1}{2}") and contains("x=\\dfrac{1}{2}", "1/2")
    assert not contains("we get 144", "14") and not contains("x = 2.5", "5")
    assert contains("the total is 1,000 apples", "1000") is False  # a comma in prose separates numbers
    assert contains("the answer is \\left( 2, 3 \\right)", "(2,3)")
    assert contains("y = -3", "-3") and not contains("5-3 = 2", "-3")
    assert contains("ends with 7.", "7")


async def _store(path: Path, stage0: bool = False) -> None:
    async with Store.open(path) as store:
        for f in FAMILIES:
            await store.put_family(f)
        for f in OTHER if stage0 else []:
            await store.put_family(f.model_copy(update={"provenance": Provenance(source="other")}))
        run_id = await store.start_run("probe", {"max_tokens": 64})
        for pid, texts in ATTEMPTS.items():
            for k, text in enumerate(texts):
                await store.put_rollout(Rollout(run_id=run_id, student="s", pid=pid, target="C1_direct", k=k,
                                                call_key=f"{pid}{k}", response=text,
                                                verdict=Verdict(Label.NOT_ACCEPT, "not equivalent")))
            for (p, i), label in STAGE0.items() if stage0 and pid == "A" else []:
                await store.put_rollout(Rollout(run_id=run_id, student="s", pid=p, target=f"m{i}", k=0,
                                                call_key=f"{p}m{i}", response="\\boxed{1}", verdict=Verdict(label, "")))
            # an attempt under help is no unaided attempt: it takes no part
            await store.put_rollout(Rollout(run_id=run_id, student="s", pid=pid, target="C3_gold_answers", k=0,
                                            call_key=f"{pid}c3", response="144 12 9\\pi 0.5 15",
                                            verdict=Verdict(Label.NOT_ACCEPT, "not equivalent")))


def test_the_hand_built_example_gives_the_hand_computed_rates(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(_store(path))
    result = CliRunner().invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)["s"]
    assert (r["families"], r["attempts"], r["golds"], r["novel_golds"]) == (3, 6, 5, 4)
    assert r["all"]["own"] == {"hits": 6, "pairs": 10, "rate": 0.6}
    assert r["all"]["control"] == {"hits": 2, "pairs": 20, "rate": 0.1}
    assert r["all"]["ratio"] == pytest.approx(6.0)
    assert r["novel"]["own"] == {"hits": 5, "pairs": 8, "rate": 0.625}
    assert r["novel"]["control"] == {"hits": 1, "pairs": 16, "rate": 0.0625}
    assert r["novel"]["ratio"] == pytest.approx(10.0)
    table = CliRunner().invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path)]).stdout
    assert "| s | 3 | 6 | 4/5 | 60.0% (6/10) | 10.0% (2/20) | 6.0x | 62.5% (5/8) | 6.2% (1/16) | 10.0x |" in table


# Table 36, Stage 0 by hand: A m0 (144) and B m1 (1/2) solved alone, A m1 (12) and B m0 (9\pi) not, C untested.
# Solved alone: 144 1 of 2 + 1/2 1 of 2 -> 2/4; not solved: 12 1 of 2 + 9\pi 2 of 2 -> 3/4.
STAGE0 = {("A", 0): Label.ACCEPT, ("A", 1): Label.NOT_ACCEPT, ("B", 0): Label.NOT_ACCEPT, ("B", 1): Label.ACCEPT}
# Table 37 against a second set of the same problems (C not in it): A's gold of 26 characters is in no attempt,
# B's "4.5\pi" in B2. On A and B this set's golds hit 5 of 8 pairs at every length (all are <= 15 characters);
# the other's 1 of 4 (all), 1 of 2 (<= 25 and <= 15: B's alone). Ratios 0.625 / 0.25 = 2.5, then 0.625 / 0.5 = 1.25.
OTHER = [_family("A", FAMILIES[0].parent_prompt, "the digits of 144 sum to 9"),
         _family("B", FAMILIES[1].parent_prompt, "4.5\\pi")]


def test_tables36_37_split_by_solved_alone_and_by_length(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(_store(path, stage0=True))
    runner = CliRunner()
    result = runner.invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path), "--json",
                                 "--against", "other"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)["s"]
    assert r["all"]["own"] == {"hits": 6, "pairs": 10, "rate": 0.6}  # Table 35 as before: Stage 0 is no attempt
    assert r["solved_alone"] == {"solved": {"hits": 2, "pairs": 4, "rate": 0.5},
                                 "not_solved": {"hits": 3, "pairs": 4, "rate": 0.75}}
    assert r["by_length"] == {k: {"hits": 6, "pairs": 10, "rate": 0.6} for k in ("all", "<=25", "<=15")}
    v = r["against"]
    assert v["families"] == 2
    assert [v["by_length"][k]["other"]["hits"] for k in ("all", "<=25", "<=15")] == [1, 1, 1]
    assert [v["by_length"][k]["other"]["pairs"] for k in ("all", "<=25", "<=15")] == [4, 2, 2]
    assert [v["by_length"][k]["ratio"] for k in ("all", "<=25", "<=15")] == pytest.approx([2.5, 1.25, 1.25])
    table = runner.invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path),
                                "--against", "other"]).stdout
    assert "| s | 50.0% (2/4) | 75.0% (3/4) |" in table
    assert "| s | 60.0% (6/10) | 60.0% (6/10) | 60.0% (6/10) |" in table and "| s | 2 | 2.50 | 1.25 | 1.25 |" in table


def test_without_stage0_table36_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(_store(path))
    r = CliRunner().invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path)])
    assert "- s: Table 36 not available: no Stage 0 verdicts on these families." in r.stdout
    assert "Solved alone" not in r.stdout


def test_a_student_without_c1_attempts_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(_store(path))
    result = CliRunner().invoke(app, ["audit", "roadmap-match", "--student", "t", "--store", str(path)])
    assert result.exit_code == 2 and "no C1 attempts of student 't'" in result.output


@pytest.mark.local
def test_it_runs_on_a_real_run_of_the_embedded_model(tmp_path: Path) -> None:
    """A demo-like run: the embedded SmolLM2 answers C1 on two sample families; the audit prints its
    table with the counts the run implies (pairs = golds x attempts)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    store = str(tmp_path / "demo.sqlite")
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(DEMO_FAMILIES), "--store", store]).exit_code == 0
    result = runner.invoke(app, ["probe", "--student", "local", "--k", "2", "--no-stage0", "--conditions", "C1",
                                 "--max-tokens", "64", "--limit", "2", "--store", store])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["audit", "roadmap-match", "--student", "local", "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)["local"]
    golds = sum(len(f.tested()) for f in list(read_jsonl(Path(str(DEMO_FAMILIES)), Family))[:2])
    assert (r["families"], r["attempts"], r["golds"]) == (2, 4, golds)
    assert r["all"]["own"]["pairs"] == 2 * golds and r["all"]["control"]["pairs"] == 2 * golds
    table = runner.invoke(app, ["audit", "roadmap-match", "--student", "local", "--store", store]).stdout
    print("\n" + table)
    assert f"| local | 2 | 4 | {r['novel_golds']}/{golds} |" in table


async def _unaided_never(path: Path) -> None:
    """A second student, t, with a C3 answer per family and no unaided (C1) attempt."""
    async with Store.open(path) as store:
        run_id = await store.start_run("probe", {"max_tokens": 64})
        for f in FAMILIES:
            await store.put_rollout(Rollout(run_id=run_id, student="t", pid=f.pid, target="C3_gold_answers", k=0,
                                            call_key=f"t{f.pid}", response="\\boxed{0}",
                                            verdict=Verdict(Label.ACCEPT, "equivalent")))


def test_the_report_has_tables36_37_as_the_audit_computes_them(tmp_path: Path) -> None:
    """Tables 36 and 37 in report.md, report.json and the HTML report (with --against, Table 37's ratio): the
    hand-computed numbers above, the audit's own, with the settings line; one line for a student with no
    unaided attempt."""
    path, out = tmp_path / "s.sqlite", tmp_path / "report"
    asyncio.run(_store(path, stage0=True))
    asyncio.run(_unaided_never(path))
    runner = CliRunner()
    audit = json.loads(runner.invoke(app, ["audit", "roadmap-match", "--student", "s", "--store", str(path),
                                           "--json", "--against", "other"]).stdout)["s"]
    result = runner.invoke(app, ["report", "--student", "s", "--student", "t", "--store", str(path),
                                 "--out", str(out), "--html", "--against", "other"])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "report.json").read_text())["students"]
    assert written["s"]["containment"] == audit and written["t"]["containment"] is None
    assert audit["solved_alone"] == {"solved": {"hits": 2, "pairs": 4, "rate": 0.5},
                                     "not_solved": {"hits": 3, "pairs": 4, "rate": 0.75}}
    assert audit["by_length"] == {k: {"hits": 6, "pairs": 10, "rate": 0.6} for k in ("all", "<=25", "<=15")}
    ratios = [audit["against"]["by_length"][k]["ratio"] for k in ("all", "<=25", "<=15")]
    assert ratios == pytest.approx([2.5, 1.25, 1.25])
    md = (out / "report.md").read_text()
    at = "At: s: K = 2, max_tokens = 64, temperature = ?, grader = strict, prompts = unknown."
    for title, row in (("(Table 36)", "| s | 50.0% (2/4) | 75.0% (3/4) |"),
                       ("(Table 37)", "| s | 60.0% (6/10) | 60.0% (6/10) | 60.0% (6/10) |"),
                       ("(Table 37)", "| s | 2 | 2.50 | 1.25 | 1.25 |")):
        section = md.split(title)[1].split("\n## ")[0]
        assert at in section and row in section and "| t |" not in section, title
    assert ("Tables 36 and 37 (milestone answers in the unaided attempts) not available for t: they read the text "
            "of C1 attempts") in md
    overview = (out / "html" / "data" / "overview.js").read_text()
    tables = json.loads(overview[overview.index("(") + 1:overview.rindex(")")])["tables_html"]
    assert "(Table 36)" in tables and "<td>50.0% (2/4)</td>" in tables and "not available for t" in tables
