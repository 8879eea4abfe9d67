"""Compile keeps infrastructure failures apart from plan failures: a provider that fails the teacher call
or the independent-solve calls (or a grader that cannot grade a solve) ends the attempt as a provider (or
grader) failure, with no re-ask and no error text in any prompt; `ladder compile` says so, exits non-zero,
and a rerun compiles the problem."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import oracleladder.verify
from oracleladder.cli import app
from oracleladder.schemas import Verdict
from oracleladder.schemas.types import GradeStatus, Label
from oracleladder.store import CallRecord, Store
from oracleladder.testing import LoopbackServer, Refuse
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve

EXIT_INCOMPLETE = 3


async def _calls(path: Path) -> list[CallRecord]:
    """Every stored call, read as the store reads it (long requests are compressed)."""
    async with Store.open(path) as store:
        return await store.calls()


@pytest.mark.parametrize("failing", ["solve", "teacher"])
def test_provider_failure_is_no_plan_failure(tmp_path: Path, quick_retries, failing: str) -> None:
    outage = True
    teacher_requests = []

    def provider(messages: list[dict], body: dict) -> str:
        is_teacher = asks_plan(messages)
        if outage and failing == ("teacher" if is_teacher else "solve"):
            raise Refuse(500, "upstream boom")
        if is_teacher:
            teacher_requests.append(messages)
            return json.dumps(GOOD)
        return solve(messages)

    problems, store = tmp_path / "problems.jsonl", tmp_path / "s.sqlite"
    problems.write_text(PROBLEM.model_dump_json() + "\n")
    args = ["compile", str(problems), "--teacher", "openai/t", "--store", str(store)]
    with LoopbackServer(script=provider) as server:
        result = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])
        assert result.exit_code == EXIT_INCOMPLETE, result.output
        out = " ".join(result.output.split())
        assert "compiled 0, failed 0, infrastructure failures 1" in out and "roots: provider failure:" in out
        assert "upstream boom" in out
        assert len(teacher_requests) == (1 if failing == "solve" else 0)  # never re-asked

        prompts = [json.dumps(c.request) for c in asyncio.run(_calls(store))]
        con = sqlite3.connect(store)
        attempts = con.execute("SELECT attempt, passed, errors, plan IS NOT NULL FROM compile_attempts").fetchall()
        status = con.execute("SELECT status FROM runs WHERE kind = 'compile'").fetchall()
        con.close()
        assert not any(word in p for p in prompts for word in ("boom", "ServerError", "HTTP 500", "call failed"))
        assert [(a, passed, has_plan) for a, passed, _, has_plan in attempts] == [(0, 0, failing == "solve")]
        errors = json.loads(attempts[0][2])
        assert [e["check"] for e in errors] == ["provider"] and "upstream boom" in errors[0]["reason"]
        assert status == [("done_with_failures",)]

        outage = False
        result = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url, "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert (summary["compiled"], summary["failed"], summary["infrastructure_failures"]) == (1, 0, 0)
        assert len(teacher_requests) == 1


def test_code_compile_provider_failure(tmp_path: Path) -> None:
    """The code compiler: a teacher call the provider refuses is a provider failure, not the teacher's."""
    problems, store = tmp_path / "code.jsonl", tmp_path / "s.sqlite"
    problems.write_text(json.dumps({"pid": "double", "statement": "Read n and print 2n.",
                                    "tests": [{"input": "2\n", "output": "4\n"}]}) + "\n")

    def provider(messages: list[dict], body: dict) -> str:
        raise Refuse(400, "prompt too long for this deployment")

    with LoopbackServer(script=provider) as server:
        result = CliRunner().invoke(app, ["compile", str(problems), "--domain", "code", "--teacher", "openai/t",
                                          "--store", str(store), "--base-url", server.openai_base_url, "--json"])
        assert server.total == 1  # a permanent error: neither retried nor re-asked
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    summary = json.loads(result.stdout)
    assert (summary["compiled"], summary["failed"], summary["infrastructure_failures"]) == (0, 0, 1)
    assert summary["infrastructure_failed_why"]["double"].startswith("provider failure: teacher call failed")
    assert "prompt too long" in summary["infrastructure_failed_why"]["double"]


async def broken_grade(pool, response: str, gold: str, **kwargs) -> Verdict:
    """Grading that fails, as when its worker dies."""
    return Verdict(label=Label.NOT_ACCEPT, reason="grading failed: worker died", status=GradeStatus.UNGRADED)


def test_a_solve_the_grader_cannot_grade_is_no_plan_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    teacher_requests = []

    def provider(messages: list[dict], body: dict) -> str:
        if asks_plan(messages):
            teacher_requests.append(messages)
            return json.dumps(GOOD)
        return solve(messages)

    problems, store = tmp_path / "problems.jsonl", tmp_path / "s.sqlite"
    problems.write_text(PROBLEM.model_dump_json() + "\n")
    args = ["compile", str(problems), "--teacher", "openai/t", "--store", str(store), "--json"]
    with LoopbackServer(script=provider) as server:
        with monkeypatch.context() as patch:
            patch.setattr(oracleladder.verify, "grade", broken_grade)
            result = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])
        assert result.exit_code == EXIT_INCOMPLETE, result.output
        summary = json.loads(result.stdout)
        assert (summary["compiled"], summary["failed"], summary["infrastructure_failures"]) == (0, 0, 1)
        assert summary["infrastructure_failed_why"]["roots"].startswith("grader failure: independent solve failed")
        assert len(teacher_requests) == 1  # not re-asked
        result = CliRunner().invoke(app, [*args, "--base-url", server.openai_base_url])
        assert result.exit_code == 0 and json.loads(result.stdout)["compiled"] == 1
        assert len(teacher_requests) == 1
