"""Runs that finish: a request that fails for good (a permanent 400, or an outage longer than the
retries) fails its job, not the run; the run finishes every other job, names the failed ones and
exits non-zero; a rerun asks them again. An answer whose grading failed (UNGRADED) is in no table,
is counted in the report, and `ladder regrade` grades it from the stored response without a call.
All through the CLI against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import oracleladder.verify
from oracleladder.cli import app
from oracleladder.domains.math.prompts import condition_prompt
from oracleladder.schemas import Family, Verdict, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.schemas.types import GradeStatus, Label
from oracleladder.testing import LoopbackServer, Refuse
from oracleladder.validators import reference_answer_problem
from oracleladder.verify import grade, verify_inprocess
from tests.helpers import rows

STUDENT = "openai/student"
WRONG = r"I think it is \boxed{987654321}."
EXIT_INCOMPLETE = 3


@pytest.fixture
def families(tmp_path: Path, release_data: Path) -> tuple[list[Family], Path]:
    """Two released families whose boxed parent answer the verifier accepts, imported into a store
    (not one whose reference answer is unusable: the report leaves those out)."""
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
            if verify_inprocess(f"\\boxed{{{f.parent_answer}}}", f.parent_answer).accepted
            and reference_answer_problem(f) is None][:2]
    path = tmp_path / "families.jsonl"
    write_jsonl(path, (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    return fams, store


def _probe(store: Path, server: LoopbackServer, *extra: str):
    return CliRunner().invoke(app, ["probe", "--student", STUDENT, "--k", "2", "--no-stage0", "--conditions",
                                    "C1_direct", "--conditions", "C3_gold_answers", "--store", str(store),
                                    "--base-url", server.openai_base_url, "--concurrency", "4", *extra])


def _report(store: Path, out: Path) -> dict:
    result = CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())["students"][STUDENT]


@pytest.mark.parametrize("status, message, reason", [
    (400, "the maximum context length is 4096 tokens", "BadRequestError"),
    (500, "upstream unavailable", "gave up after 3 attempts"),
])
def test_a_request_failing_for_good_fails_its_job_not_the_run(families, quick_retries, tmp_path: Path,
                                                              status: int, message: str, reason: str) -> None:
    fams, store = families
    c3 = condition_prompt(fams[1], "C3_gold_answers", fams)[0][-1]["content"]
    outage = True

    def student(messages: list[dict], body: dict) -> str:
        if outage and messages[-1]["content"] == c3:
            raise Refuse(status, message)
        return WRONG

    with LoopbackServer(script=student) as server:
        result = _probe(store, server)
        assert result.exit_code == EXIT_INCOMPLETE, result.output
        out = " ".join(result.output.split())
        assert "2 jobs failed" in out and reason in out and message in out
        for k in (0, 1):
            assert f"pid {fams[1].pid} target C3_gold_answers k {k}" in out
        # every other job has its rollout; the failed ones have none, and their calls are stored failed
        rollouts = rows(store, "SELECT pid, target, status FROM rollouts_named")
        assert len(rollouts) == 2 * 2 * 2 - 2
        assert (fams[1].pid, "C3_gold_answers", "graded") not in rollouts
        errors = rows(store, "SELECT error FROM calls WHERE response IS NULL")
        assert len(errors) == 2 and all(message in e for (e,) in errors)
        assert rows(store, "SELECT status FROM runs WHERE kind = 'probe'") == [("done_with_failures",)]

        missing = _report(store, tmp_path / "report")["missing"]
        assert (missing["failed"], missing["ungraded_total"]) == ({"C3_gold_answers": 2}, 0)
        assert "Missing verdicts" in (tmp_path / "report" / "report.md").read_text()

        # the rerun asks exactly the failed jobs again (everything else is cached) and completes
        outage = False
        asked = server.total
        result = _probe(store, server)
        assert result.exit_code == 0, result.output
        assert server.total == asked + 2
    assert len(rows(store, "SELECT * FROM rollouts")) == 2 * 2 * 2
    assert [s for (s,) in rows(store, "SELECT status FROM runs WHERE kind = 'probe' ORDER BY rowid")][-1] == "done"
    assert _report(store, tmp_path / "report")["missing"]["failed_total"] == 0  # the answered jobs are failed no more


async def broken_grade(pool, response: str, gold: str, **kwargs) -> Verdict:
    """Grading that fails (as when a worker dies) for answers carrying a marker."""
    if "MARK" in response:
        return Verdict(label=Label.NOT_ACCEPT, reason="grading failed: worker died", status=GradeStatus.UNGRADED)
    return await grade(pool, response, gold, **kwargs)


def test_ungraded_answers_are_in_no_table_and_regrade_grades_them_without_a_call(
        families, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fams, store = families
    right = {f.parent_prompt: f"MARK \\boxed{{{f.parent_answer}}}" if i == 0 else f"\\boxed{{{f.parent_answer}}}"
             for i, f in enumerate(fams)}
    out = tmp_path / "report"

    with LoopbackServer(script=lambda messages, body: right.get(messages[-1]["content"], WRONG)) as server:
        with monkeypatch.context() as patch:
            patch.setattr(oracleladder.verify, "grade", broken_grade)
            result = _probe(store, server)
        assert result.exit_code == EXIT_INCOMPLETE, result.output
        assert "2 answers could not be graded" in " ".join(result.output.split())
        assert sorted(rows(store, "SELECT pid, status FROM rollouts_named WHERE status = 'ungraded'")) == [(fams[0].pid, "ungraded")] * 2

        before = _report(store, out)
        # family 0's C1 answers are ungraded: in no table, but counted
        assert before["conditions"]["C1_direct"]["families_run"] == 1
        assert before["conditions"]["C1_direct"]["rollouts"] == 2
        assert before["outcomes"]["Direct"] == 1
        assert before["missing"]["ungraded"] == {"C1_direct": 2} and before["missing"]["failed_total"] == 0
        assert "2 rollouts ungraded" in (out / "report.md").read_text()

        asked = server.total
        result = CliRunner().invoke(app, ["regrade", "--student", STUDENT, "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) | {"run_id": None} == {"run_id": None, "regraded": 2, "still_ungraded": 0,
                                                                "accepted": 2}
        assert server.total == asked  # graded from the stored responses: no request
    assert rows(store, "SELECT COUNT(*) FROM rollouts WHERE status = 'ungraded'") == [(0,)]
    after = _report(store, out)
    assert after["conditions"]["C1_direct"]["families_run"] == 2 and after["outcomes"]["Direct"] == 2
    assert after["missing"]["ungraded_total"] == 0


def test_rerunning_the_probe_grades_ungraded_answers_from_the_cache(families, monkeypatch: pytest.MonkeyPatch) -> None:
    fams, store = families
    with LoopbackServer(script=lambda messages, body: f"MARK {WRONG}") as server:
        with monkeypatch.context() as patch:
            patch.setattr(oracleladder.verify, "grade", broken_grade)
            assert _probe(store, server).exit_code == EXIT_INCOMPLETE
        asked = server.total
        result = _probe(store, server)
        assert result.exit_code == 0, result.output
        assert server.total == asked
    assert rows(store, "SELECT status, label, COUNT(*) FROM rollouts GROUP BY status, label") == [("graded", "NOT_ACCEPT", 8)]
