"""The automated rubric review (`ladder audit review`, paper Table 42), end to end against the loopback
server: a probed student with four composition-gap families and one Direct one, a scripted reviewer
that flags two, labels one clean and answers one unreadably twice; Table 42 counted by hand, in the
command's output and in the report; a rerun asks nothing. Two students: one question per distinct family,
its label carried to both. The review read against a human audit of the same student (`audit human --review`)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family
from oracleladder.testing import LoopbackServer, Refuse
from tests.audit.test_human import _fill
from tests.helpers.composition import STUDENT, WRONG, composition_gap_store

REVIEWER = "openai/reviewer-model"


@pytest.fixture
def probed(tmp_path: Path, release_data: Path) -> tuple[Path, list[Family]]:
    return composition_gap_store(tmp_path, release_data)


def _label(category: str, verifier: bool, fmt: bool) -> str:
    return json.dumps({"category": category, "verifier_error": verifier, "format_error": fmt,
                       "evidence": "scripted"})


def _reviewer(fams: list[Family], asked: Counter[str]):
    """Family 0: a verifier artifact; 1: incomplete, with a format error; 2: unreadable, every time;
    3: a genuine composition failure."""
    replies = [_label("Verifier_Artifact", True, False), _label("Decomposition_Incomplete", False, True),
               "I would rather not say.", _label("Genuine_Composition", False, False)]

    def script(messages: list[dict], body: dict) -> str:
        i = next(i for i, f in enumerate(fams) if f.parent_prompt in messages[0]["content"])
        asked[fams[i].pid] += 1
        return replies[i]
    return script


def _review(store: Path, server: LoopbackServer, *more: str):
    return CliRunner().invoke(app, ["audit", "review", "--reviewer", REVIEWER, "--student", STUDENT,
                                    "--store", str(store), "--base-url", server.openai_base_url, *more])


def test_review_gives_table_42_by_hand_and_a_rerun_asks_nothing(probed, tmp_path: Path) -> None:
    store, fams = probed
    asked: Counter[str] = Counter()
    with LoopbackServer(script=_reviewer(fams, asked)) as server:
        result = _review(store, server, "--json")
        assert result.exit_code == 0, result.output
        # one question per composition-gap family, the unreadable one asked once more; never the Direct one
        assert server.total == 5 and asked == {fams[0].pid: 1, fams[1].pid: 1, fams[2].pid: 2, fams[3].pid: 1}
        out = json.loads(result.stdout)
        assert (out["families"], out["labeled"], out["unreviewed"], out["failed"]) == (4, 3, 1, 0)
        # by hand: 5 families, 4 in the gap, 3 labeled of which 2 flagged; the unreadable one stays in the gap
        row = out["table"][STUDENT]
        assert (row["families"], row["gap"], row["labeled"], row["unlabeled"], row["flagged"]) == (5, 4, 3, 1, 2)
        assert row["flagged_share"] == pytest.approx(2 / 3)
        assert (row["before"], row["after"]) == (pytest.approx(4 / 5), pytest.approx(2 / 5))
        assert row["categories"] == {"Verifier_Artifact": 1, "Beyond_Capability": 0, "Not_Standalone": 0,
                                     "Decomposition_Incomplete": 1, "Genuine_Composition": 1}
        assert row["categories_unflagged"] == {"Verifier_Artifact": 0, "Beyond_Capability": 0, "Not_Standalone": 0,
                                               "Decomposition_Incomplete": 0, "Genuine_Composition": 1}
        # a rerun: every reviewer call (the re-ask too) is the cache's
        again = _review(store, server)
        assert again.exit_code == 0, again.output
        assert server.total == 5
    assert f"| {STUDENT} | 4 | 3 | 1 | 2 | 66.7% | 80.0% | 40.0% |" in again.stdout
    assert f"| {STUDENT} | 1 / 0 | 0 / 0 | 0 / 0 | 1 / 0 | 1 / 1 |" in again.stdout
    assert "3 labeled, 1 unreviewed" in again.stderr
    with sqlite3.connect(store) as con:  # the unreadable family is stored unreviewed: no category
        stored = dict(con.execute("SELECT pid, label FROM reviews").fetchall())
    assert stored[fams[2].pid] is None and json.loads(stored[fams[0].pid])["category"] == "Verifier_Artifact"

    report = CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(store),
                                      "--out", str(tmp_path / "out")])
    assert report.exit_code == 0, report.output
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    assert written["review"][STUDENT] == row
    assert f"| {STUDENT} | 4 | 3 | 1 | 2 | 66.7% | 80.0% | 40.0% |" in (tmp_path / "out" / "report.md").read_text()


def test_two_students_one_question_per_family_the_label_carried_to_both(tmp_path: Path, release_data: Path) -> None:
    # both students have the same four composition-gap families (attempts that differ: their wrong answers):
    # four questions and the unreadable family's re-ask, not one set per student; each student's Table 42 row
    # reads the shared labels (as the single student's above)
    other = "openai/student-b"
    store, fams = composition_gap_store(tmp_path, release_data, {STUDENT: WRONG, other: "\\boxed{123456789}"})
    asked: Counter[str] = Counter()
    with LoopbackServer(script=_reviewer(fams, asked)) as server:
        result = _review(store, server, "--student", other, "--json")
        assert result.exit_code == 0, result.output
        assert server.total == 5 and asked == {fams[0].pid: 1, fams[1].pid: 1, fams[2].pid: 2, fams[3].pid: 1}
    out = json.loads(result.stdout)
    assert (out["families"], out["labeled"], out["unreviewed"], out["failed"]) == (4, 3, 1, 0)
    for s in (STUDENT, other):
        row = out["table"][s]
        assert (row["families"], row["gap"], row["labeled"], row["unlabeled"], row["flagged"]) == (5, 4, 3, 1, 2)
    with sqlite3.connect(store) as con:
        stored = Counter(student for (student,) in con.execute("SELECT student FROM reviews"))
    assert stored == {STUDENT: 4, other: 4}


def test_the_review_against_the_human_audit_of_the_student(probed, tmp_path: Path) -> None:
    store, fams = probed
    with LoopbackServer(script=_reviewer(fams, Counter())) as server:
        assert _review(store, server).exit_code == 0
    folder = tmp_path / "audit"
    sheets = CliRunner().invoke(app, ["audit", "human", "--student", STUDENT, "--sheets", str(folder),
                                      "--store", str(store)])
    assert sheets.exit_code == 0, sheets.output
    # the raters: families 0, 2 and 3 Verifier_Artifact, 1 Decomposition_Incomplete. The review covers 0, 1 and 3
    # (2 is unreviewed) and flags 0 and 1: the same verdict on family 0 alone, 1 of 3; both flag 2 of 3, so
    # p_e = (2 * 2 + 1 * 1) / 9 and kappa = (1/3 - 5/9) / (1 - 5/9) = -0.5; the review flags 1 of the raters' 2
    labels = {fams[0].pid: "Verifier_Artifact", fams[1].pid: "Decomposition_Incomplete",
              fams[2].pid: "Verifier_Artifact", fams[3].pid: "Verifier_Artifact"}
    for rater in ("rater-a.csv", "rater-b.csv"):
        _fill(folder / rater, labels)
    read = CliRunner().invoke(app, ["audit", "human", "--read", str(folder), "--review", "--store", str(store),
                                    "--json"])
    assert read.exit_code == 0, read.output
    r = json.loads(read.stdout)["review"]
    assert (r["n"], r["agree"], r["human_flagged"], r["both_flagged"]) == (3, 1, 2, 1)
    assert r["kappa"] == pytest.approx(-0.5)
    text = CliRunner().invoke(app, ["audit", "human", "--read", str(folder), "--review", "--store", str(store)])
    assert ("on the 3 families both cover, the same verifier or format verdict for 1 (33.3%, Cohen's kappa -0.50); "
            "the review flags 1 of the 2 families the raters resolved to Verifier_Artifact.") in text.stdout
    # without --review, no such line
    assert "review" not in json.loads(CliRunner().invoke(app, ["audit", "human", "--read", str(folder),
                                                                "--json"]).stdout)


def test_the_reviewer_reads_the_attempts_and_the_grader(probed) -> None:
    store, fams = probed
    prompts: list[str] = []

    def script(messages: list[dict], body: dict) -> str:
        prompts.append(messages[-1]["content"])
        return _label("Genuine_Composition", False, False)

    with LoopbackServer(script=script) as server:
        assert _review(store, server).exit_code == 0
    text = next(p for p in prompts if fams[0].parent_prompt in p)
    first = fams[0].tested()[0][1]
    assert f"gold answer: {first.answer}" in text and f"Reference answer: {fams[0].parent_answer}" in text
    assert "m0, attempt 1: ACCEPT (equivalent)" in text and "C3, attempt 2: NOT_ACCEPT (not equivalent)" in text
    assert "extracted: 987654321" in text and f"<<<{WRONG}>>>" in text


def test_a_report_without_a_review_says_so(probed, tmp_path: Path) -> None:
    store, _ = probed
    assert CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(store),
                                    "--out", str(tmp_path / "out")]).exit_code == 0
    assert json.loads((tmp_path / "out" / "report.json").read_text())["review"] is None
    assert "Not run: `ladder audit review`" in (tmp_path / "out" / "report.md").read_text()


def test_a_reviewer_call_failing_for_good_is_counted_not_stored_and_exits_3(probed) -> None:
    store, fams = probed
    asked: Counter[str] = Counter()
    scripted = _reviewer(fams, asked)

    def script(messages: list[dict], body: dict) -> str:
        if fams[3].parent_prompt in messages[0]["content"]:
            raise Refuse(400, "the maximum context length is 4096 tokens")
        return scripted(messages, body)

    with LoopbackServer(script=script) as server:
        result = _review(store, server, "--json")
    assert result.exit_code == 3, result.output
    out = json.loads(result.stdout)
    assert (out["labeled"], out["unreviewed"], out["failed"]) == (2, 1, 1)
    assert out["table"][STUDENT]["unlabeled"] == 2  # the failed family is not reviewed: it stays in the gap
    with sqlite3.connect(store) as con:
        assert fams[3].pid not in {pid for (pid,) in con.execute("SELECT pid FROM reviews")}


def test_a_batch_review_asks_through_the_batch_api_and_online_asks_nothing_again(probed) -> None:
    store, fams = probed
    asked: Counter[str] = Counter()
    with LoopbackServer(script=_reviewer(fams, asked), batch_delay=0.2) as server:
        batch = _review(store, server, "--json", "--batch", "--batch-poll", "0.1", "--batch-quiet", "0.3")
        assert batch.exit_code == 0, batch.output
        out = json.loads(batch.stdout)
        # four questions, then the one re-ask: two rounds, no online call
        assert out["batch_rows_submitted"] == 5 and server.total == 0
        assert (out["labeled"], out["unreviewed"]) == (3, 1)
        online = _review(store, server, "--json")
        assert online.exit_code == 0 and server.total == 0
    assert json.loads(online.stdout)["table"] == out["table"]


def test_a_reviewer_that_never_answers_in_the_rubrics_json_exits_3(probed) -> None:
    store, _ = probed
    with LoopbackServer(script=lambda messages, body: "I would rather not say.") as server:
        result = _review(store, server)
        as_json = _review(store, server, "--json")  # the same replies, from the cache
    assert result.exit_code == 3, result.output
    assert "0 labeled, 4 unreviewed" in result.output
    assert f"no family was reviewed: {REVIEWER} gave no readable reply" in result.output
    assert as_json.exit_code == 3 and json.loads(as_json.stdout)["unreviewed"] == 4
