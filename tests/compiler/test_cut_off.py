"""A teacher reply cut off at its token budget is asked again once at twice the budget (the cut-off attempt
stored and counted); one cut off again fails the problem, saying which budget to raise. The loopback server
cuts each answer at the request's max_tokens as a real server does."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve

PLAN = json.dumps(GOOD, indent=24)  # about 420 tokens at the server's 4 characters a token


def _compile(tmp_path: Path, max_tokens: int) -> tuple[dict, list[int], list]:
    asked: list[int] = []

    def teacher(messages: list[dict], body: dict) -> str:
        if not asks_plan(messages):
            return solve(messages)
        asked.append(body["max_tokens"])
        return PLAN

    pool, store = tmp_path / "pool.jsonl", tmp_path / "s.sqlite"
    pool.write_text(PROBLEM.model_dump_json() + "\n")
    with LoopbackServer(script=teacher, cut_at_budget=True) as server:
        result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                          server.openai_base_url, "--structured", "json_schema", "--max-tokens",
                                          str(max_tokens), "--max-attempts", "3", "--store", str(store), "--json"])

    async def attempts() -> list:
        async with Store.open(store) as s:
            return await s.compile_attempts("roots", "openai/t")

    return json.loads(result.stdout), asked, asyncio.run(attempts())


def test_a_plan_cut_off_at_its_budget_is_asked_again_at_twice_it(tmp_path: Path) -> None:
    assert 300 * 4 < len(PLAN) <= 600 * 4  # cut at 300 tokens, whole at 600
    summary, asked, attempts = _compile(tmp_path, 300)
    assert asked == [300, 600]
    assert (summary["compiled"], summary["budget_raised"]) == (1, 1)
    assert [(a.passed, [e["reason"] for e in a.errors]) for a in attempts] == [
        (False, ["the reply was cut off at --max-tokens 300; asked again at 600"]), (True, [])]


def test_a_plan_cut_off_twice_fails_naming_the_budget_to_raise(tmp_path: Path) -> None:
    summary, asked, attempts = _compile(tmp_path, 100)
    assert asked == [100, 200]  # once: a third attempt at 400 would be cut off too, and it is not asked
    assert (summary["compiled"], summary["failed"], summary["budget_raised"]) == (0, 1, 1)
    assert len(attempts) == 2 and not any(a.passed for a in attempts)
    assert "cut off at --max-tokens 200: raise it" in attempts[-1].errors[0]["reason"]
