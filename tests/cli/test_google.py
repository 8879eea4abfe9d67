"""A google/ teacher and student through the `ladder` commands, against the loopback server speaking
Gemini's wire (generateContent) to the real google-genai SDK: compile (a structured plan, re-asked
once), probe, a rerun that asks nothing, and GEMINI_API_KEY kept from a server that is not Google's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.testing import LoopbackServer
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve

MODEL = "google/gemini-2.5-flash"


class Gemini:
    """The teacher's first plan is prose, its second GOOD; a student answers every question 5."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.plans = iter(["Let me explain in words first.", json.dumps(GOOD)])

    def __call__(self, messages: list[dict], body: dict) -> str:
        self.bodies.append(body)
        if asks_plan(messages):
            return next(self.plans)
        if "Milestone:" in messages[-1]["content"]:
            return solve(messages)
        return r"So the answer is \boxed{5}."


def test_compile_and_probe_with_a_google_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-SECRET")
    pool, store = tmp_path / "pool.jsonl", str(tmp_path / "g.sqlite")
    pool.write_text(PROBLEM.model_dump_json() + "\n")
    script = Gemini()
    runner = CliRunner()
    with LoopbackServer(script=script) as server:
        url = server.google_base_url
        compiled = runner.invoke(app, ["compile", str(pool), "--teacher", MODEL, "--base-url", url, "--store", store,
                                       "--json"])
        assert compiled.exit_code == 0, compiled.output
        probe = ["probe", "--student", MODEL, "--source", MODEL, "--k", "2", "--conditions", "C1_direct", "--conditions",
                 "C3_gold_answers", "--base-url", url, "--store", store,
                 "--json"]
        probed = runner.invoke(app, probe)
        assert probed.exit_code == 0, probed.output
        asked = server.total
        again = runner.invoke(app, probe)
        assert again.exit_code == 0, again.output
    summary, first, second = (json.loads(r.stdout) for r in (compiled, probed, again))
    assert (summary["compiled"], summary["attempts_per_family"]) == (1, {"2": 1})
    plans = [b for b in script.bodies if "responseSchema" in b.get("generationConfig", {})]
    assert len(plans) == 2 and plans[1]["contents"][1]["role"] == "model"  # the re-ask shows the model its reply
    assert "Invalid JSON" in plans[1]["contents"][2]["parts"][0]["text"]
    assert first["requests"] > 0 and first["failed_jobs"] == [] and first["cost_usd"] > 0
    assert second["requests"] == 0 and server.total == asked
    assert all("contents" in b for b in script.bodies)  # every call on Gemini's wire
    assert set(server.credentials) == {None}  # the loopback server is not Google's host
