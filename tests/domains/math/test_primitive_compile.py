"""The teacher side of the primitive rung against a scripted teacher (in process, and on the loopback
server through `ladder compile` and the Python API): the compiled plan carries a primitive checked in the
retry-on-error loop, and `ladder compile --primitives-only` writes one onto released families in the
same loop, every attempt stored with its reason (a reply that is not JSON too, re-asked)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder import Endpoint, Experiment
from oracleladder.cli import app
from oracleladder.clients import ChatRequest, Client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains.math import MathDomain
from oracleladder.store import Store
from oracleladder.testing import FakeProvider, LoopbackServer
from oracleladder.workers import WorkerPool
from tests.helpers import roots

LEAKY = "Factor the quadratic; the roots are 2 and 3 and their sum is five, i.e. 5."
GOOD = "Factor the quadratic into two linear factors and read the roots off the factors."


async def test_the_compiled_plan_carries_a_primitive_and_a_leaky_one_is_reasked(tmp_path: Path,
                                                                                verifier: WorkerPool) -> None:
    reasks: list[str] = []

    def teacher(request: ChatRequest) -> str:
        messages = request.messages
        if not roots.asks_plan(messages):
            return roots.solve(messages)
        if len(messages) > 2:
            reasks.append(messages[-1]["content"])
        return json.dumps({**roots.GOOD, "primitive": GOOD if len(messages) > 2 else LEAKY})

    async with Store.open(tmp_path / "s.sqlite") as store:
        client = Client(FakeProvider(teacher), model="teacher", cache=store)
        [outcome] = await Compiler(client, store, MathDomain(verifier)).compile_all([roots.PROBLEM])
        attempts = await store.compile_attempts("roots", "openai/teacher")
        family = await store.get_family("roots", source="openai/teacher")

    assert outcome.ok and outcome.attempts == 2
    assert len(reasks) == 1 and "[primitive_leak]" in reasks[0] and "reference answer" in reasks[0]
    assert [a.passed for a in attempts] == [False, True]
    assert {e["check"] for e in attempts[0].errors} >= {"primitive_leak"}
    assert attempts[0].plan["primitive"] == LEAKY
    assert family.primitive is not None
    assert (family.primitive.text, family.primitive.provenance, family.primitive.teacher) == (
        GOOD, "teacher", "openai/teacher")


PICKS = ("de4b7c19", "fe16d1aa", "e0e93ee4")
PRIMITIVES = {  # per family: the teacher's answer at each attempt
    "de4b7c19": ["Fix one face and count the ordered triples on it, then correct the overcount with "
                 "inclusion-exclusion over shared edges and vertices."],
    "fe16d1aa": ["After the late votes October 22 has 180 votes in all.",  # milestone 2's gold
                 "Let the initial turnout be unknown and write one date's share before and after the late "
                 "votes as one linear equation."],
    "e0e93ee4": ["The value comes out to m = 32/9.", "Then m equals 3.5 roughly, so read the options."],
}


def _released(release_data: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The three picked released families as a JSONL file, and each one's problem statement by pid prefix."""
    records = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()]
    picked = [r for r in records if r["pid"][:8] in PICKS]
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return path, {r["pid"][:8]: r["parent_prompt"] for r in picked}


async def _read(store: Path):
    s = await Store.open(store)
    try:
        return await s.primitive_attempts(), {f.pid[:8]: f for f in await s.families("release")}
    finally:
        await s.close()


def test_primitives_only_writes_primitives_onto_released_families(release_data: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    runner = CliRunner()
    path, problems = _released(release_data, tmp_path)
    assert runner.invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    asked: dict[str, int] = {}

    def teacher(messages: list[dict], body: dict) -> str:
        user = messages[1]["content"]
        assert "Roadmap:" in user and "Sub-goal 1:" in user and "Answer:" in user
        pid = next(p for p, problem in problems.items() if problem.strip() in user)
        n = asked[pid] = asked.get(pid, 0) + 1
        return json.dumps({"primitive": PRIMITIVES[pid][min(n, len(PRIMITIVES[pid])) - 1]})

    with LoopbackServer(script=teacher) as server:
        args = ["compile", "--primitives-only", "--teacher", "openai/t", "--base-url", server.openai_base_url,
                "--max-attempts", "2", "--store", str(store), "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output.strip().splitlines()[-1])
        rerun = runner.invoke(app, args)
        again = json.loads(rerun.output.strip().splitlines()[-1])

    assert (summary["families"], summary["had_primitive"], summary["compiled"]) == (3, 0, 2)
    assert [p[:8] for p in summary["failed_why"]] == ["e0e93ee4"]
    assert asked == {"de4b7c19": 1, "fe16d1aa": 2, "e0e93ee4": 2}  # the rerun's calls come from the cache
    assert (again["had_primitive"], again["compiled"], list(again["failed_why"])) == (2, 0, list(summary["failed_why"]))

    attempts, families = asyncio.run(_read(store))
    by_pid: dict[str, list] = {}
    for a in attempts:
        by_pid.setdefault(a.pid[:8], []).append(a)
    assert [(a.attempt, a.passed) for a in by_pid["de4b7c19"]] == [(0, True)]
    assert [(a.attempt, a.passed) for a in by_pid["fe16d1aa"]] == [(0, False), (1, True)]
    assert by_pid["fe16d1aa"][0].errors[0]["check"] == "primitive_leak"
    assert "milestone 2's gold" in by_pid["fe16d1aa"][0].errors[0]["reason"]
    assert [a.passed for a in by_pid["e0e93ee4"]] == [False, False]  # the rerun's attempts replace the first run's
    assert {e["check"] for a in by_pid["e0e93ee4"] for e in a.errors} == {"primitive_leak", "primitive_arithmetic"}
    assert all(a.teacher == "openai/t" and a.source == "release" for a in attempts)
    assert families["fe16d1aa"].primitive.text == PRIMITIVES["fe16d1aa"][1]
    assert families["fe16d1aa"].primitive.provenance == "teacher-primitives-only"
    assert families["de4b7c19"].primitive.teacher == "openai/t"
    assert families["e0e93ee4"].primitive is None


async def test_a_primitive_reply_that_is_not_json_is_a_stored_attempt_reasked(release_data: Path, tmp_path: Path) -> None:
    path, problems = _released(release_data, tmp_path)
    reasks: list[str] = []

    def teacher(messages: list[dict], body: dict) -> str:
        if len(messages) == 2:
            return "The key idea: factor it."  # prose, not the JSON object asked for
        reasks.append(messages[-1]["content"])
        return json.dumps({"primitive": PRIMITIVES["de4b7c19"][0]})

    async with LoopbackServer(script=teacher) as server:
        async with Experiment(tmp_path / "s.sqlite", workers=1) as ex:
            await ex.import_families(path)
            summary = await ex.compile_primitives(Endpoint("openai/t", base_urls=[server.openai_base_url]))
            attempts = await ex.store.primitive_attempts()

    assert (summary.compiled, summary.failed_why) == (3, {})
    # instructor's re-ask for the mode (json_schema): the errors in a user message
    assert len(reasks) == 3 and all(r.startswith("Correct your JSON ONLY RESPONSE, based on the following errors:\n"
                                                 "(whole reply): Invalid JSON") for r in reasks)
    assert sorted((a.attempt, a.passed, a.primitive) for a in attempts) == [(0, False, None)] * 3 + [
        (1, True, PRIMITIVES["de4b7c19"][0])] * 3
    assert {e["check"] for a in attempts for e in a.errors} == {"teacher"}
