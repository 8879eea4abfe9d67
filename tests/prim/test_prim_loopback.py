"""PRIM end to end through the CLI against the loopback server: four released families with
hand-written gold primitives (tests/data/prim_gold.jsonl), a scripted student and a scripted judge
whose answers are fixed per prompt. The ladder is probed too, so PRIM's quadrant of each family
stands beside the ladder's five-way gap. Every table equals the counts worked out by hand below.

The script, per family (A solves directly; B, C, D fail Generation):

            Generation  Discovery           Digestion              Exec gold  Exec teacher  ladder
    A 196   right       GOOD: 1.0           GOOD: 1.0              right      (none)        C1 right: Direct
    B 37/64 wrong       GOOD, mech ½: 0.8   BAD: invalid, 0        wrong      right         C2 right, Stage 0 right: Roadmap-gap
    C 78    wrong       BAD: invalid, 0     judge not JSON: missing right     wrong         C3 right, Stage 0 right: Milestone-execution-gap
    D 34    wrong       unreadable: 0       GOOD: 1.0              wrong      wrong         nothing right: Capability-gap

Execution under the student's own primitive (self) is wrong everywhere; D's Discovery is unreadable,
so D has no self job.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.prim.scripted import JUDGE, NAMES, STUDENT, TEACHER, B, C, D, scripted_store

# the reason of a score whose judge never gave the JSON asked for (clients.asking), then pydantic's words
NOT_JSON = "not the JSON asked for, twice: (whole reply): "


def test_prim_end_to_end_tables_equal_the_hand_counts(tmp_path: Path, release_data: Path) -> None:
    run = scripted_store(tmp_path, release_data)
    store, families, which, probed, judged = run.store, run.families, run.which, run.probed, run.judged
    # 4 Discovery, 4 Generation (C1: the ladder's call, from the cache), 4 Digestion, 4 gold,
    # 3 teacher (A has none), 3 self (D's Discovery is unreadable)
    assert probed["rollouts"] == 22 and probed["cache_hits"] == 4
    assert probed["skipped"] == {"prim_execution:teacher-problem-only": 1, "prim_execution:self": 1}
    assert run.asked[("A", "C1")] == 1  # Generation is the ladder's C1 call, asked once
    result, runner = run.scored, CliRunner()
    assert result.exit_code == 3, result.output  # incomplete: one score is missing
    scored = json.loads(result.output.strip().splitlines()[-1])
    assert (scored["scored"], scored["unreadable"], scored["missing"], scored["without_gold"]) == (7, 1, 1, 0)
    assert scored["correct"] == {"prim_discovery": 2, "prim_digestion": 2}
    # the reply that is not JSON was asked again (with the reply shown back), then left missing
    assert judged["GOOD-C-DIG:GATE:1"] == 1 and judged["GOOD-C-DIG:GATE:3"] == 1

    async def scores():
        async with Store.open(store) as s:
            return {(NAMES[x.pid], x.target): x for x in await s.prim_scores(student=STUDENT, judge=JUDGE)}
    by = asyncio.run(scores())
    missing = by[("C", "prim_digestion")]
    assert (missing.status, missing.score, missing.validity) == ("missing", None, 1)
    # its calls: validity, the gate and its re-ask, the mechanism
    assert missing.reason.startswith(f"gate: {NOT_JSON}") and len(missing.call_keys) == 4
    assert (by[("B", "prim_discovery")].gate, by[("B", "prim_discovery")].mechanism,
            by[("B", "prim_discovery")].score) == (1.0, 0.5, 0.8)
    assert (by[("D", "prim_discovery")].score, by[("D", "prim_discovery")].reason) == (0.0, "unreadable")
    assert (by[("C", "prim_discovery")].validity, by[("C", "prim_discovery")].failure) == (0, "generic")

    out = tmp_path / "report"
    result = runner.invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                 "--store", str(store)])
    assert result.exit_code == 0, result.output
    r = json.loads((out / "report.json").read_text())
    # Table 1, by hand: Discovery A, B of 4; Generation A of 4; Digestion A, D of A, B, D (C's score is
    # missing: left out); Execution (gold) A, C of 4
    t1 = r["table1"]
    points = {d: v["interval"]["point"] for d, v in t1["dimensions"].items()}
    assert points == pytest.approx({"discovery": 0.5, "generation": 0.25, "digestion": 2 / 3, "execution": 0.5})
    assert {d: v["n"] for d, v in t1["dimensions"].items()} == {"discovery": 4, "generation": 4, "digestion": 3,
                                                               "execution": 4}
    assert t1["dig_minus_disc"] == pytest.approx(100 * (2 / 3 - 0.5))
    assert t1["exec_minus_gen"] == pytest.approx(25.0)
    assert r["missing_scores"] == 1
    # Table 2 / 8: teacher on B, C, D (B right; Generation 0 there); self on A, B, C (none right;
    # Generation 1 of 3 there)
    assert [(s["setting"], s["n"]) for s in r["table2"]] == [
        ("generation", 4), ("execution (gold)", 4), ("execution (teacher-problem-only)", 3), ("execution (self)", 3)]
    assert [s["accuracy"] for s in r["table2"]] == pytest.approx([25.0, 50.0, 100 / 3, 0.0])
    assert [s["change"] for s in r["table2"][1:]] == pytest.approx([25.0, 100 / 3, -100 / 3])
    # Table 7: A, B, C are RECAST (Discovery 2 of 3, Execution 2 of 3), D ARGUMENT (neither)
    assert r["table7"]["RECAST"]["discovery"] == pytest.approx(200 / 3)
    assert r["table7"]["RECAST"]["execution"] == pytest.approx(200 / 3)
    assert r["table7"]["ARGUMENT"] == {"discovery": 0.0, "generation": 0.0, "digestion": 100.0, "execution": 0.0}
    # Table 9: B D+E- (0.8 >= tau, gold wrong), C D-E+ (invalid, gold right), D D-E- (unreadable, gold wrong)
    assert r["table9"] == {"discovery-limited": 1, "capability-limited": 1, "execution-limited": 1,
                           "utilization-limited": 0, "unknown": 0}
    # Table 10: D digestible and not rescued by the teacher's primitive; B undigestible and rescued;
    # C's Digestion has no score: in neither
    assert r["table10"] == {"digestible": {"n": 1, "rescued": 0, "rate": 0.0},
                            "undigestible": {"n": 1, "rescued": 1, "rate": 1.0}}
    # side by side: each family's PRIM place beside the ladder's gap
    rows = {NAMES[pid]: (v["prim"], v["ladder_gap"]) for pid, v in r["side_by_side"]["families"].items()}
    assert rows == {"A": ("solved", "Direct"), "B": ("execution-limited", "Roadmap-gap"),
                    "C": ("discovery-limited", "Milestone-execution-gap"), "D": ("capability-limited", "Capability-gap")}
    assert r["side_by_side"]["cross"] == {"solved": {"Direct": 1}, "execution-limited": {"Roadmap-gap": 1},
                                          "discovery-limited": {"Milestone-execution-gap": 1},
                                          "capability-limited": {"Capability-gap": 1}}
    # Figure 12: answers by right and wrong (C's missing Digestion score in neither)
    f12 = {d: (v["right"]["n"], v["wrong"]["n"]) for d, v in r["figure12"].items()}
    assert f12 == {"discovery": (2, 2), "generation": (1, 3), "digestion": (2, 1), "execution (gold)": (2, 2),
                   "execution (teacher-problem-only)": (1, 2), "execution (self)": (0, 3)}
    assert r["figure12"]["generation"]["right"]["median"] > 0
    # Figure 2: A D+G+, B D+G-, C and D D-G-
    assert r["figure2"] == {"D+G+": 1, "D+G−": 1, "D−G+": 0, "D−G−": 2} and r["repairs"] is None
    # a family's detail: its primitives, and what the student wrote with the judge's verdicts and evidence
    b = r["families"][B]
    assert set(b["primitives"]) == {"gold", f"teacher-problem-only ({TEACHER})"} and b["family"] == "RECAST"
    disc = next(w for w in b["written"] if w["target"] == "prim_discovery")
    assert (disc["primitive"]["core_concept"], disc["gate"], disc["mechanism"], disc["score"]) == ("GOOD-B-DISC", 1.0, 0.5, 0.8)
    assert disc["evidence"] == {"validity": "read", "gate": "compared", "mechanism": "compared"}
    d_disc = next(w for w in r["families"][D]["written"] if w["target"] == "prim_discovery")
    # scored 0 by rule, with no judge asked: no V of the judge's is shown, and why it was unreadable is
    assert (d_disc["primitive"], d_disc["score"], d_disc["validity"], d_disc["reason"]) == (
        None, 0.0, None, "unreadable (no box): scored 0, the judge was not asked")
    c_dig = next(w for w in r["families"][C]["written"] if w["target"] == "prim_digestion")
    assert (c_dig["status"], c_dig["score"]) == ("missing", None) and c_dig["reason"].startswith(f"gate: {NOT_JSON}")
    md = (out / "report.md").read_text()
    assert "| 50.00 [" in md and "| discovery-limited | D−E+ | 1 |" in md
    assert "| Discovery | Generation | Digestion | Execution | Dig. − Disc. | Exec. − Gen. |" in md

    # Tables 3 / 11: a later checkpoint solves B and D directly and loses A: it repairs the
    # execution-limited and the capability-limited failure, not the discovery-limited one; 1 of 1 regressed
    def after(messages: list[dict], body: dict) -> str:
        name = which(messages[-1]["content"])
        pid = next(p for p, n in NAMES.items() if n == name)
        return f"\\boxed{{{families[pid]['parent_answer']}}}" if name in ("B", "D") else "\\boxed{0}"

    with LoopbackServer(script=after) as server:
        result = runner.invoke(app, ["prim", "probe", "--student", "openai/after", "--dimensions", "generation",
                                     "--base-url", server.openai_base_url, "--store", str(store)])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                 "--after", "openai/after", "--store", str(store)])
    assert result.exit_code == 0, result.output
    repaired = json.loads((out / "report.json").read_text())["repairs"]
    assert {q: (v["n"], v["rescued"]) for q, v in repaired["by_quadrant"].items()} == {
        "discovery-limited": (1, 0), "capability-limited": (1, 1), "execution-limited": (1, 1),
        "utilization-limited": (0, 0), "unknown": (0, 0)}
    assert (repaired["solved_before"], repaired["regressed"]) == (1, 1)
    # Figures 2 and 3 across the two: the later checkpoint was probed for Generation only
    result = runner.invoke(app, ["prim", "across", "--student", STUDENT, "--student", "openai/after", "--judge", JUDGE,
                                 "--out", str(out), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "across.json").read_text()) == {
        STUDENT: {"discovery": 50.0, "generation": 25.0, "composition": {"D+G+": 1, "D+G−": 1, "D−G+": 0, "D−G−": 2}},
        "openai/after": {"discovery": None, "generation": 50.0,
                         "composition": {"D+G+": 0, "D+G−": 0, "D−G+": 0, "D−G−": 0}}}

    # the judge's own audit: its six verdicts (D's unreadable Discovery and C's missing Digestion are
    # none), four judged correct and two incorrect, on a judge-blind sheet; a person who disagrees once
    # on a judged-correct case: agreement 5/6, kappa (5/6 - 1/2) / (1 - 1/2) = 2/3 (p_e = (4*3 + 2*3) / 36)
    sheet = tmp_path / "audit.csv"
    result = runner.invoke(app, ["prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(sheet),
                                 "--n", "10", "--store", str(store)])
    assert result.exit_code == 0, result.output
    key = json.loads((tmp_path / "audit.csv.key.json").read_text())["cases"]
    assert len(key) == 6 and sum(c["judge_correct"] for c in key.values()) == 4
    with sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert "score" not in rows[0] and all(r["model_primitive"].startswith("essential_property:") for r in rows)
    flipped = next(r["case"] for r in rows if key[r["case"]]["judge_correct"])
    for r in rows:
        r["label"] = "incorrect" if r["case"] == flipped or not key[r["case"]]["judge_correct"] else "correct"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    result = runner.invoke(app, ["prim", "audit", "--read", str(sheet)])
    assert result.exit_code == 0, result.output
    audit = json.loads(result.output)
    assert (audit["labelled"], audit["disagreements"]) == (6, [flipped])
    assert audit["agreement"] == pytest.approx(5 / 6) and audit["kappa"] == pytest.approx(2 / 3)
    rows[2]["label"] = "maybe"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    result = runner.invoke(app, ["prim", "audit", "--read", str(sheet)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {sheet}:4: label 'maybe' is not one of correct, incorrect (or blank)"
    result = runner.invoke(app, ["prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(sheet),
                                 "--store", str(store)])
    assert result.exit_code == 2 and "is never overwritten" in result.output

    # the answer judge on the 10 answers the grader rejected (Generation B, C, D; gold B, D; teacher
    # C, D; self A, B, C): it reads D's three (Generation, gold, teacher) as correct; kept apart, and
    # counted only when the report asks for it
    def answer_judge(messages: list[dict], body: dict) -> str:
        user = messages[0]["content"]
        assert user.startswith("Judge whether the following response")
        return json.dumps({"extracted_final_answer": "999999", "correct": "yes" if which(user) == "D" else "no",
                           "reasoning": "compared"})

    with LoopbackServer(script=answer_judge) as server:
        result = runner.invoke(app, ["prim", "answers", "--judge", "openai/answers", "--student", STUDENT, "--json",
                                     "--base-url", server.openai_base_url, "--store", str(store)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert (summary["judged"], summary["correct"], summary["missing"]) == (10, 3, 0)
    result = runner.invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                 "--answer-judge", "openai/answers", "--store", str(store)])
    assert result.exit_code == 0, result.output
    r = json.loads((out / "report.json").read_text())
    assert (r["answer_judge"], r["answer_judge_accepts"]) == ("openai/answers", 3)
    points = {d: v["interval"]["point"] for d, v in r["table1"]["dimensions"].items()}
    assert (points["generation"], points["execution"]) == (0.5, 0.75)  # A (grader) and D (judge); A, C and D
    assert r["table9"] == {"discovery-limited": 1, "capability-limited": 0, "execution-limited": 1,
                           "utilization-limited": 0, "unknown": 0}  # D is no Generation failure now
    assert "or the answer judge openai/answers reads it correct (3 answers by the judge alone)" in (
        out / "report.md").read_text()
