"""The judge audit of the grader, end to end against the loopback server: a probed student, a
scripted judge, the stratified seeded sample, the grader-blind sheet, and a filled-in sheet read back
into the result table with hand-derived counts and projections."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from oracleladder.audit.judge import allocate, paired, paired_markdown
from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer, Refuse
from oracleladder.validators import reference_answer_problem
from oracleladder.verify import verify_inprocess

STUDENT, JUDGE = "openai/student", "openai/judge-model"
SURE = "I am sure."
NB_SURE = f"The answer is forty-two. {SURE}"  # no box; the judge accepts
NB = "I ran out of time."  # no box; the judge rejects
PE_SURE = f"\\boxed{{\\int_0^1 x\\,dx}} {SURE}"  # a box the verifier cannot parse; the judge accepts
NE_SURE = f"\\boxed{{987654321}} {SURE}"  # not equivalent; the judge accepts
NE = "\\boxed{987654320}"  # not equivalent; the judge rejects
# What a person reading the sheet labels each accepted case (the first NE_SURE case: undecidable).
LABEL = {NB_SURE: "incorrect", PE_SURE: "correct", NE_SURE: "malformed_reference"}


def test_allocation_is_proportional_with_largest_remainders() -> None:
    assert allocate({"a": 4, "b": 2, "c": 8}, 7) == {"a": 2, "b": 1, "c": 4}
    assert allocate({"a": 4, "b": 2, "c": 8}, 10) == {"a": 3, "b": 1, "c": 6}
    assert allocate({"a": 75, "b": 35, "c": 17}, 40) == {"a": 24, "b": 11, "c": 5}  # the paper's 40 of 127
    assert allocate({"a": 100, "b": 1}, 2) == {"a": 1, "b": 1}  # every stratum is seen
    assert allocate({"a": 3, "b": 1}, 9) == {"a": 3, "b": 1}


def test_paired_grades_by_hand() -> None:
    """Tables 46 and 45 from a key's judged rollouts: 40 accepted (4 judged), 30 no boxed (3 judged, one
    verdict unreadable), 10 parse errors (2 judged); weights 10, 15 and 5."""
    judged = ([["accepted", "NUMBER", "ACCEPT"]] * 3 + [["accepted", "EXPR", "NOT_ACCEPT"]]
              + [["no boxed", "NUMBER", "ACCEPT"], ["no boxed", "NUMBER", "NOT_ACCEPT"], ["no boxed", "EXPR", "unreadable"]]
              + [["parse error", "EXPR", "ACCEPT"]] * 2)
    key = {"strata": {"accepted": {"rollouts": 40}, "no boxed": {"rollouts": 30}, "parse error": {"rollouts": 10}},
           "judged": judged}
    p = paired(key)
    a = p["all"]
    assert (p["graded"], p["unjudged"], a["n"]) == (80, 1, 8)
    assert (a["both_accept"], a["both_reject"], a["judge_accepts_cascade_rejects"],
            a["cascade_accepts_judge_rejects"]) == (3, 1, 3, 1)
    assert a["bound"] == {} and a["share"]["both_accept"] == 3 / 8
    assert a["projected"] == {"both_accept": 30.0, "both_reject": 15.0, "judge_accepts_cascade_rejects": 25.0,
                              "cascade_accepts_judge_rejects": 10.0}
    number, expr = p["schemas"]["NUMBER"], p["schemas"]["EXPR"]
    assert (number["n"], number["both_accept"], number["judge_accepts_cascade_rejects"]) == (5, 3, 1)
    assert number["bound"] == {"cascade_accepts_judge_rejects": 3 / 5}  # the rule of three where a cell is empty
    assert expr["n"] == 3 and expr["bound"] == {"both_accept": 1.0, "both_reject": 1.0}
    text = "\n".join(paired_markdown(p, JUDGE, STUDENT))
    assert "| NUMBER | 5 | 3 (60.0%) | 1 (20.0%) | 1 (20.0%) | 0 (< 60.0%) |" in text
    assert "| projected to all 80 graded | 80 | 30.0 | 15.0 | 25.0 | 10.0 |" in text


@pytest.fixture
def probed(tmp_path: Path, release_data: Path):
    """Two released families probed under C1 and C3, K = 4, by a scripted student: per C1 prompt
    NB_SURE, NB, NE_SURE, NE; per C3 prompt PE_SURE, NE_SURE, NE and the right answer (the first
    family's sure of it). Rejected: 4 no boxed (2 judged sure), 2 parse errors (2), 8 not equivalent
    (4); 2 accepted (1 sure)."""
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
            if verify_inprocess(f"\\boxed{{{f.parent_answer}}}", f.parent_answer).accepted
            and reference_answer_problem(f) is None][:2]
    path = tmp_path / "families.jsonl"
    write_jsonl(path, (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    asked: Counter[str] = Counter()
    answers = {}
    for f in fams:
        answers[f.parent_prompt] = [NB_SURE, NB, NE_SURE, NE]
    right = {f.pid: f"\\boxed{{{f.parent_answer}}}" + (f" {SURE}" if i == 0 else "") for i, f in enumerate(fams)}

    def student(messages: list[dict], body: dict) -> str:
        text = messages[-1]["content"]
        asked[text] += 1
        if text in answers:
            return answers[text][asked[text] - 1]
        pid = next(f.pid for f in fams if f.parent_prompt in text)  # C3: the problem with its roadmap
        return [PE_SURE, NE_SURE, NE, right[pid]][asked[text] - 1]

    with LoopbackServer(script=student) as server:
        result = CliRunner().invoke(app, [
            "probe", "--student", STUDENT, "--k", "4", "--no-stage0", "--conditions", "C1", "--conditions", "C3",
            "--store", str(store), "--base-url", server.openai_base_url, "--concurrency", "1"])
    assert result.exit_code == 0, result.output
    return store


def _judge_script(messages: list[dict], body: dict) -> str:
    verdict = "ACCEPT" if SURE in messages[-1]["content"] else "NOT_ACCEPT"
    return f'{{"verdict": "{verdict}", "reason": "scripted"}}'


def _audit(store: Path, server: LoopbackServer, sheet: Path, n: int, *more: str):
    return CliRunner().invoke(app, ["audit", "judge", "--judge", JUDGE, "--student", STUDENT, "--n", str(n),
                                    "--seed", "0", "--sheet", str(sheet), "--store", str(store),
                                    "--base-url", server.openai_base_url, "--json", *more])


def _fill(sheet: Path, first: str | None = None) -> list[dict]:
    """Label every case as a person reading it would (or the first one ``first``)."""
    rows = list(csv.DictReader(sheet.open(newline="")))
    undecided = False
    for row in rows:
        tail = row["response_tail"]
        row["label"] = LABEL[tail]
        if tail == NE_SURE and not undecided:
            row["label"], undecided = "undecidable", True
    if first is not None:
        rows[0]["label"] = first
    with sheet.open("w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    return rows


def _read(sheet: Path) -> dict:
    result = CliRunner().invoke(app, ["audit", "judge", "--read", str(sheet), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_rejected_rollout_judged_gives_the_hand_derived_table(probed: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    with LoopbackServer(script=_judge_script) as judge:
        result = _audit(probed, judge, sheet, 100)
        assert result.exit_code == 0, result.output
        audit = json.loads(result.stdout)
        assert audit["judge_accepts"] == 8
        # every graded rollout judged; one question each, where two rollouts of a family answered the
        # same text under C1 and C3 (NE_SURE, NE) the same question: 6 per family
        assert judge.total == 12
        # a rerun asks nothing again: every judge call is cached
        assert _audit(probed, judge, tmp_path / "again.csv", 100).exit_code == 0
        assert judge.total == 12
        shown = CliRunner().invoke(app, ["audit", "judge", "--judge", JUDGE, "--student", STUDENT, "--n", "100",
                                         "--sheet", str(tmp_path / "shown.csv"), "--store", str(probed),
                                         "--base-url", judge.openai_base_url])
    assert shown.exit_code == 0, shown.output
    assert "| sample | 16 | 1 (6.2%) | 6 (37.5%) | 8 (50.0%) | 1 (6.2%) |" in shown.stdout
    assert "| EXPR | 16 |" in shown.stdout
    # Table 46 by hand: of the 2 accepted, the judge accepts the sure one; of the 14 rejected, the 8 sure ones
    table46 = audit["paired"]["all"]
    assert (table46["n"], table46["both_accept"], table46["cascade_accepts_judge_rejects"],
            table46["judge_accepts_cascade_rejects"], table46["both_reject"]) == (16, 1, 1, 8, 6)
    assert table46["bound"] == {} and table46["share"]["judge_accepts_cascade_rejects"] == 0.5
    assert table46["projected"]["both_reject"] == pytest.approx(6.0)  # every rollout judged: weight 1
    assert list(audit["paired"]["schemas"]) == ["EXPR"]  # both parent answers ("2k", "4 or 2 1/4") are formulas
    assert (tmp_path / "again.csv").read_text() == sheet.read_text()

    # grader-blind: the end of the response, the reference and the note; no grader, no verdict
    text = sheet.read_text()
    assert text.splitlines()[0] == "case,response_tail,reference_answer,note,label,comment"
    for word in ("judge", "verifier", "cascade", "grader", "no boxed", "parse error", "not equivalent", STUDENT):
        assert word not in text.lower()
    rows = list(csv.DictReader(sheet.open(newline="")))
    assert "NOT_ACCEPT" not in text and all(r["label"] == r["comment"] == "" for r in rows)
    key = json.loads((tmp_path / "sheet.csv.key.json").read_text())
    assert {c["judge"] for c in key["cases"].values()} == {"ACCEPT"} and key["judge"] == JUDGE

    _fill(sheet)
    r = _read(sheet)
    nb, pe, ne = r["strata"]["no boxed"], r["strata"]["parse error"], r["strata"]["not equivalent"]
    assert (nb["rejected"], nb["judged"], nb["judge_accepts"], nb["judge_over_acceptances"]) == (4, 4, 2, 2)
    assert (pe["rejected"], pe["judged"], pe["judge_accepts"], pe["verifier_false_negatives"]) == (2, 2, 2, 2)
    assert (ne["rejected"], ne["judged"], ne["judge_accepts"], ne["adjudicated"], ne["undecidable"],
            ne["malformed_references"]) == (8, 8, 4, 3, 1, 3)
    # projection: weight 1 everywhere; the undecidable case is shared out as the adjudicated ones are
    assert ne["projected_malformed_references"] == pytest.approx(4.0)
    a = r["all"]
    assert (a["rejected"], a["judge_accepts"], a["adjudicated"]) == (14, 8, 7)
    assert (a["projected_verifier_false_negatives"], a["projected_malformed_references"],
            a["projected_judge_over_acceptances"]) == pytest.approx((2.0, 4.0, 2.0))
    assert r["graded"] == 16
    table = CliRunner().invoke(app, ["audit", "judge", "--read", str(sheet)]).stdout
    assert "| not equivalent | 8 | 8 | 4 | 3 | 0 | 3 | 0 | 1 | 0 |" in table
    assert "about 6.0 of 16 graded rollouts (37.5%), 42.9% of the 14 it rejects" in table


def test_a_stratified_sample_is_seeded_and_projected_with_its_weights(probed: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    with LoopbackServer(script=_judge_script) as judge:
        assert _audit(probed, judge, sheet, 7).exit_code == 0
        asked = judge.total
        assert 0 < asked <= 7
        # the same seed draws the same sample, whose judge calls are all cached
        assert _audit(probed, judge, tmp_path / "again.csv", 7).exit_code == 0
        assert judge.total == asked
    key = json.loads((tmp_path / "sheet.csv.key.json").read_text())
    # 7 of 16: quotas 0.875 accepted, 1.75 no boxed, 0.875 parse error, 3.5 not equivalent; one each, the
    # largest remainder (no boxed) the last
    assert {s: v["sampled"] for s, v in key["strata"].items()} == {"accepted": 1, "no boxed": 2, "parse error": 1,
                                                                   "not equivalent": 3}
    rows = _fill(sheet)
    r = _read(sheet)
    # weights 4/2, 2/1 and 8/3; each stratum's labels projected by its judge accepts
    kinds = Counter(row["response_tail"] for row in rows)
    nb, pe, ne = r["strata"]["no boxed"], r["strata"]["parse error"], r["strata"]["not equivalent"]
    assert (nb["weight"], pe["weight"], ne["weight"]) == (2.0, 2.0, pytest.approx(8 / 3))
    assert (nb["judge_accepts"], pe["judge_accepts"], ne["judge_accepts"]) == (kinds[NB_SURE], kinds[PE_SURE], kinds[NE_SURE])
    assert nb["projected_judge_over_acceptances"] == pytest.approx(2.0 * kinds[NB_SURE])
    assert pe["projected_verifier_false_negatives"] == pytest.approx(2.0 * kinds[PE_SURE])
    if kinds[NE_SURE] > 1:
        assert ne["projected_malformed_references"] == pytest.approx(8 / 3 * kinds[NE_SURE])
    assert json.loads((tmp_path / "again.csv.key.json").read_text())["cases"] == key["cases"]


def test_a_label_outside_the_vocabulary_is_one_line(probed: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    with LoopbackServer(script=_judge_script) as judge:
        assert _audit(probed, judge, sheet, 100).exit_code == 0
    _fill(sheet, first="maybe")
    result = CliRunner().invoke(app, ["audit", "judge", "--read", str(sheet)])
    assert result.exit_code == 2 and "label 'maybe' is not one of" in result.output


def test_a_judge_call_failing_for_good_is_counted_not_judged_and_a_sheet_is_never_overwritten(
        probed: Path, tmp_path: Path) -> None:
    def judge_script(messages: list[dict], body: dict) -> str:
        if NB_SURE in messages[-1]["content"]:
            raise Refuse(400, "the maximum context length is 4096 tokens")
        return _judge_script(messages, body)

    sheet = tmp_path / "sheet.csv"
    with LoopbackServer(script=judge_script) as judge:
        result = _audit(probed, judge, sheet, 100)
        assert result.exit_code == 3, result.output
        assert json.loads(result.stdout)["failed"] == 2
        again = _audit(probed, judge, sheet, 100)
    assert again.exit_code == 2 and "a sheet is never overwritten" in again.output
    strata = json.loads((tmp_path / "sheet.csv.key.json").read_text())["strata"]
    assert strata["no boxed"] == {"rollouts": 4, "sampled": 4, "ACCEPT": 0, "NOT_ACCEPT": 2, "unreadable": 0,
                                  "failed": 2}
    assert NB_SURE not in sheet.read_text()
    _fill(sheet)
    nb = _read(sheet)["strata"]["no boxed"]
    assert (nb["judged"], nb["weight"], nb["projected_judge_over_acceptances"]) == (2, 2.0, 0.0)


# the options of every command that calls a model (oracleladder/cli/common.py): named here, so that a
# command dropping one, or redefining it with another help or default, fails
ENDPOINT_FLAGS = ("--base-url", "--param", "--extra-body", "--api-key-env", "--model-name", "--concurrency", "--rpm",
                  "--tpm", "--timeout", "--max-cooldown", "--batch", "--batch-poll", "--batch-quiet")


def _options(*command: str) -> dict:
    """The options of a `ladder` subcommand by flag."""
    found = typer.main.get_command(app)
    for name in command:
        found = found.commands[name]  # type: ignore[attr-defined]
    return {flag: p for p in found.params if p.param_type_name == "option" for flag in p.opts}


@pytest.mark.parametrize("command", [("audit", "judge"), ("audit", "review"), ("reanchor",)])
def test_every_command_calling_a_model_takes_the_endpoint_options_of_probe(command: tuple[str, ...]) -> None:
    probe, other = _options("probe"), _options(*command)
    help_text = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "240"}).output
    for flag in ENDPOINT_FLAGS:
        assert flag in help_text
        assert (other[flag].help, other[flag].default) == (probe[flag].help, probe[flag].default), flag


def test_server_parameters_reach_the_judge_request_body(probed: Path, tmp_path: Path) -> None:
    bodies: list[dict] = []

    def judge_script(messages: list[dict], body: dict) -> str:
        bodies.append(body)
        return _judge_script(messages, body)

    with LoopbackServer(script=judge_script) as judge:
        result = CliRunner().invoke(app, [
            "audit", "judge", "--judge", JUDGE, "--student", STUDENT, "--n", "3", "--sheet", str(tmp_path / "s.csv"),
            "--store", str(probed), "--base-url", judge.openai_base_url, "--json", "--param", "top_k=20",
            "--extra-body", '{"chat_template_kwargs": {"enable_thinking": false}}'])
    assert result.exit_code == 0, result.output
    assert len(bodies) == 3
    for body in bodies:
        assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": False}
        assert "extra_body" not in body


def test_a_batch_judge_asks_once_through_the_batch_api(probed: Path, tmp_path: Path) -> None:
    with LoopbackServer(script=_judge_script, batch_delay=0.2) as judge:
        batch = _audit(probed, judge, tmp_path / "batch.csv", 100, "--batch", "--batch-poll", "0.1",
                       "--batch-quiet", "0.3")
        assert batch.exit_code == 0, batch.output
        assert json.loads(batch.stdout)["batch_rows_submitted"] == 12 and judge.batches.created == 1
        assert judge.total == 0  # no online call
        # a batch answer is the call cache's: the same audit online asks nothing
        assert _audit(probed, judge, tmp_path / "online.csv", 100).exit_code == 0
        assert judge.total == 0
    assert (tmp_path / "online.csv").read_text() == (tmp_path / "batch.csv").read_text()
