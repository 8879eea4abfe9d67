"""The release's audit, repair and comparator files read through their record models, and Tables 17 and
39-41 rebuilt from them (`experiment.release`), on a small release folder written here in those formats:
eight real families of the release (the first eight of tests/data/families_sample.jsonl; CC BY 4.0,
credited in tests/data/README.md) with labels, repairs and counts made up so that every number is
worked out by hand below."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.experiment import release as rel
from oracleladder.schemas.jsonl import InputError

VA, BC, NS, DI, GC = "Verifier_Artifact", "Beyond_Capability", "Not_Standalone", "Decomposition_Incomplete", "Genuine_Composition"
LADDER = ("C1_direct", "C2_descriptions", "C3_gold_answers")
STUDENT = "mile_2k_step_180"


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _oracle(model: str, pid: str, c1: int, c2: int, c3: int) -> list[dict]:
    return [{"model": model, "condition": c, "pid": pid, "n_correct": n, "k": 8} for c, n in zip(LADDER, (c1, c2, c3))]


def release_folder(root: Path, release_data: Path) -> tuple[Path, list[str]]:
    families = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()[:8]]
    f = [r["pid"] for r in families]
    # rater A, rater B, the consensus (the priority rule on the three disagreements f1, f3, f6)
    labels = [(VA, VA, VA), (VA, DI, VA), (DI, DI, DI), (DI, GC, DI), (DI, DI, DI), (GC, GC, GC), (BC, GC, BC), (NS, NS, NS)]
    _write(root / "audit_rater_a.jsonl", [{"pid": p, "category": a, "reason": "why"} for p, (a, _, _) in zip(f, labels)])
    _write(root / "audit_rater_b.jsonl", [{"pid": p, "category": b} for p, (_, b, _) in zip(f, labels)])
    _write(root / "audit_consensus.jsonl", [{"pid": p, "category": c, "rater_a": a, "rater_b": b}
                                            for p, (a, b, c) in zip(f, labels)])
    _write(root / "human_validation.jsonl", [{"pid": f[0], "category": VA}, {"pid": f[2], "category": GC},
                                             {"pid": f[5], "category": GC}, {"pid": f[7], "category": NS}])
    # the verifier repair: f0 repaired (f1's could not be); its fresh pass and the kept ones' in oracle_repaired
    _write(root / "repaired_verifier.jsonl", [families[0]])
    _write(root / "oracle_repaired.jsonl", [*_oracle("m", f[0], 0, 2, 0), *_oracle("m", f[5], 0, 0, 0),
                                            *_oracle("m", f[6], 1, 0, 0), *_oracle("m", f[7], 0, 0, 1),
                                            *_oracle("m", f[2], 0, 3, 0)])  # f2: the superseded leaky repair
    # the leak-safe regenerations: f2 unlocked, f3 still unrecovered, f4 none passed the filter
    _write(root / "oracle_leak_safe_repair.jsonl", [*_oracle("m", f[2], 0, 0, 4), *_oracle("m", f[3], 0, 0, 0)])
    # the panel: the audited student (all unrecovered but f7) and a second model on four families
    _write(root / "oracle_panel_16k" / f"{STUDENT}.jsonl",
           [r for p in f[:7] for r in _oracle(STUDENT, p, 0, 0, 0)] + _oracle(STUDENT, f[7], 0, 0, 1))
    _write(root / "oracle_panel_16k" / "gpt_oss_20b.jsonl",
           [*_oracle("gpt_oss_20b", f[0], 8, 0, 0), *_oracle("gpt_oss_20b", f[1], 0, 1, 0),
            *_oracle("gpt_oss_20b", f[2], 0, 0, 2), *_oracle("gpt_oss_20b", f[3], 0, 0, 0),
            {"model": "gpt_oss_20b", "condition": "C2_random", "pid": f[3], "n_correct": 5, "k": 8}])  # a control
    _write(root / "math_hard100_panel.jsonl", [
        {"model": STUDENT, "pid": "test/algebra/1", "n_correct": 3, "k": 8},
        {"model": STUDENT, "pid": "test/algebra/2", "n_correct": 0, "k": 8},
        {"model": "gpt_oss_20b", "pid": "test/algebra/1", "n_correct": 8, "k": 8},
        {"model": "gpt_oss_20b", "pid": "test/algebra/2", "n_correct": 4, "k": 8}])
    _write(root / "math_hard100_panel_16k.jsonl", [
        {"model": STUDENT, "pid": "test/algebra/1", "n_correct": 8, "k": 8},
        {"model": STUDENT, "pid": "test/algebra/2", "n_correct": 3, "k": 8}])
    return root, f


def test_table_17_scores_and_fingerprints_by_hand(tmp_path: Path, release_data: Path) -> None:
    folder, _ = release_folder(tmp_path, release_data)
    t17 = {r["model"]: r for r in rel.read_release(folder, STUDENT)["table17"]}
    # the student: 3 + 0 of 16 attempts (0.1875), 1 of 2 problems at least once; at 16K 11 of 16, 2 of 2
    mine = t17[STUDENT]
    assert mine["comparator"]["math_hard100_panel"] == {"problems": 2, "k": 8, "score": 3 / 16, "pass_at_k": 0.5}
    assert mine["comparator"]["math_hard100_panel_16k"] == {"problems": 2, "k": 8, "score": 11 / 16, "pass_at_k": 1.0}
    assert mine["fingerprint"] == {"Direct": 0, "Roadmap-Needed": 0, "Answers-Needed": 1, "Unrecovered": 7}
    assert mine["any_probe"] == 1
    # gpt: one family each (the C2_random control's 5 of 8 is no rung); absent from the 16K comparator
    gpt = t17["gpt_oss_20b"]
    assert gpt["fingerprint"] == {"Direct": 1, "Roadmap-Needed": 1, "Answers-Needed": 1, "Unrecovered": 1}
    assert gpt["any_probe"] == 3 and gpt["comparator"]["math_hard100_panel_16k"] is None
    assert gpt["comparator"]["math_hard100_panel"]["score"] == 12 / 16
    text = "\n".join(rel.markdown(rel.read_release(folder, STUDENT)))
    assert f"| {STUDENT} | 0.19 | 0.50 | 0.69 | 1.00 | 0 | 0 | 1 | 7 | 1 |" in text
    assert "| gpt_oss_20b | 0.75 | 1.00 | not run | not run | 1 | 1 | 1 | 1 | 3 |" in text


def test_tables_39_to_41_by_hand(tmp_path: Path, release_data: Path) -> None:
    folder, f = release_folder(tmp_path, release_data)
    a = rel.read_release(folder, STUDENT)["audit"]
    # agree on f0, f2, f4, f5, f7: 5 of 8. Marginals A: VA 2, DI 3, GC 1, BC 1, NS 1; B: VA 1, DI 3, GC 3, NS 1
    # p_e = (2*1 + 3*3 + 1*3 + 1*0 + 1*1) / 64 = 15/64; kappa = (40/64 - 15/64) / (49/64) = 25/49
    assert (a["agreement"]["n"], a["agreement"]["agree"]) == (8, 5)
    assert a["agreement"]["kappa"] == pytest.approx(25 / 49)
    assert a["resolved_disagreements"] == {VA: 1, DI: 1, BC: 1} and a["priority_exceptions"] == []
    assert a["table39"] == {DI: 3, VA: 2, GC: 1, BC: 1, NS: 1}
    # validation on f0, f2, f5, f7: 3 agree; primary VA, DI, GC, NS against VA, GC, GC, NS
    # p_e = (1*1 + 1*0 + 1*2 + 1*1) / 16 = 1/4; kappa = (3/4 - 1/4) / (3/4) = 2/3
    v = a["validation"]
    assert (v["n"], v["agree"], v["raw"]) == (4, 3, 0.75) and v["kappa"] == pytest.approx(2 / 3)
    # Table 40: verifier repair f0 unlocked, f1 not applicable; leak-safe f2 unlocked, f3 unrecovered, f4 none
    t = a["triage"]
    assert (t["artifact"], t["verifier_repaired"], t["decomposition_repaired"], t["verifier_not_applicable"]) == (3, 1, 1, 1)
    assert (t["composition_or_unresolved"], t["genuine_composition"], t["decomposition_unrecovered"],
            t["verifier_unrecovered"]) == (3, 1, 2, 0)
    assert t["bounds"] == {"lower": 1, "middle": 3, "upper": 4}
    # Table 41: each row's fresh pass (Direct, Roadmap, Answers, Unrecovered) and the original Unrecovered
    rows = {r["source"]: (r["n"], r["of"], tuple(r["after"].values()), r["original"]["Unrecovered"]) for r in a["table41"]}
    assert rows == {"Leak-safe decomposition repair": (2, 3, (0, 0, 1, 1), 2),
                    "Verifier repair": (1, 2, (0, 1, 0, 0), 1),
                    "Rater-confirmed genuine, re-run": (1, 1, (0, 0, 0, 1), 1),
                    "Kept beyond capability, re-run": (1, 1, (1, 0, 0, 0), 1),
                    "Kept not standalone, re-run": (1, 1, (0, 0, 1, 0), 0),  # f7 was Answers-Needed at first
                    "Natural repair, not leak-safe (superseded)": (1, 3, (0, 1, 0, 0), 1)}
    text = "\n".join(rel.markdown(rel.read_release(folder, STUDENT)))
    assert "Raters A and B agree on 5 of 8 (62.5%), Cohen's kappa 0.51" in text
    assert "| Leak-safe decomposition repair (2/3) | 2 | 0 | 0 | 1 | 1 | 2 |" in text
    assert "at most 3+1=4 (50.0%" in text


def test_a_consensus_that_departs_from_the_priority_rule_is_said(tmp_path: Path, release_data: Path) -> None:
    folder, f = release_folder(tmp_path, release_data)
    lines = (folder / "audit_consensus.jsonl").read_text().splitlines()
    lines[3] = json.dumps({"pid": f[3], "category": GC})  # the rule gives DI
    (folder / "audit_consensus.jsonl").write_text("\n".join(lines) + "\n")
    result = rel.read_release(folder, STUDENT)
    assert result["audit"]["priority_exceptions"] == [f[3]]
    assert f"departs from the priority rule on 1 families ({f[3]})" in "\n".join(rel.markdown(result))


@pytest.mark.parametrize(("file", "line", "record", "said"), [
    ("audit_rater_a.jsonl", 3, {"pid": "x", "category": "Maybe"}, "audit_rater_a.jsonl:3: field 'category'"),
    ("math_hard100_panel.jsonl", 2, {"model": "m", "pid": "p", "n_correct": 9, "k": 8},
     "math_hard100_panel.jsonl:2: field '(record)': Value error, n_correct 9 of k 8 is no count"),
    ("human_validation.jsonl", 1, {"category": GC}, "human_validation.jsonl:1: field 'pid': Field required"),
    ("oracle_leak_safe_repair.jsonl", 1, {"model": "m", "pid": "p", "condition": "C9", "n_correct": 1, "k": 8},
     "oracle_leak_safe_repair.jsonl:1: field '(record)': Value error, unknown condition 'C9'"),
])
def test_a_record_that_does_not_fit_is_one_error_naming_file_and_line(tmp_path: Path, release_data: Path, file: str,
                                                                       line: int, record: dict, said: str) -> None:
    folder, _ = release_folder(tmp_path, release_data)
    lines = (folder / file).read_text().splitlines()
    lines[line - 1] = json.dumps(record)
    (folder / file).write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=re.escape(said)):
        rel.read_release(folder, STUDENT)


def test_files_that_disagree_on_the_families_are_refused(tmp_path: Path, release_data: Path) -> None:
    folder, f = release_folder(tmp_path, release_data)
    b = folder / "audit_rater_b.jsonl"
    b.write_text("".join(b.read_text().splitlines(keepends=True)[:7]))
    with pytest.raises(InputError, match=f"audit_rater_b.jsonl: family '{f[7]}' of audit_consensus.jsonl has no label"):
        rel.read_release(folder, STUDENT)
    release_folder(tmp_path, release_data)
    consensus = folder / "audit_consensus.jsonl"
    consensus.write_text(consensus.read_text() + json.dumps({"pid": f[0], "category": VA}) + "\n")
    with pytest.raises(InputError, match=f"audit_consensus.jsonl:9: pid '{f[0]}' repeats line 1 .*; remove one$"):
        rel.read_release(folder, STUDENT)
    release_folder(tmp_path, release_data)
    rerun = folder / "oracle_repaired.jsonl"
    rerun.write_text("".join(rerun.read_text().splitlines(keepends=True)[3:]))  # f0's fresh pass gone
    with pytest.raises(InputError, match=f"verifier-repaired family '{f[0]}' has no fresh oracle pass"):
        rel.read_release(folder, STUDENT)


def test_ladder_audit_release_prints_the_tables_and_exits_2_on_a_bad_record(tmp_path: Path, release_data: Path) -> None:
    folder, _ = release_folder(tmp_path, release_data)
    result = CliRunner().invoke(app, ["audit", "release", str(folder)])
    assert result.exit_code == 0, result.output
    assert "(Table 17)" in result.output and "(Table 39)" in result.output and "(Table 41)" in result.output
    shown = json.loads(CliRunner().invoke(app, ["audit", "release", str(folder), "--json"]).output)
    assert shown["audit"]["triage"]["bounds"] == {"lower": 1, "middle": 3, "upper": 4}
    (folder / "audit_rater_b.jsonl").write_text('{"pid": 1}\n')
    bad = CliRunner().invoke(app, ["audit", "release", str(folder)])
    assert bad.exit_code == 2 and "audit_rater_b.jsonl:1: field 'pid'" in bad.output
    assert CliRunner().invoke(app, ["audit", "release", str(tmp_path / "nowhere")]).exit_code == 2
