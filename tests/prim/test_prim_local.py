"""PRIM on the real embedded model (SmolLM2-135M through llama-cpp-python, offline), as student and as
judge: `prim probe --student local` on one released family with its gold primitive runs every
dimension and stores every answer; `prim score --judge local` then scores a (scripted, readable)
student's primitives, each ending scored or missing with its reason, every judge call stored. Its
numbers need not mean anything.

Bounded for 2 cores: K = 1, 64 tokens per answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]

PID = "f8a3e468-191f-474b-9353-04d5d1e32347"


@pytest.mark.timeout(900)
def test_prim_on_the_embedded_model(release_data: Path, tmp_path: Path) -> None:
    store, fams = tmp_path / "local.sqlite", tmp_path / "one.jsonl"
    fams.write_text(next(x for x in (release_data / "families_sample.jsonl").read_text().splitlines() if PID in x)
                    + "\n")
    runner = CliRunner()
    for args in (["import", str(fams)], ["prim", "import", str(release_data / "prim_gold.jsonl")]):
        assert runner.invoke(app, [*args, "--store", str(store)]).exit_code == 0

    result = runner.invoke(app, ["prim", "probe", "--student", "local", "--max-tokens", "64", "--json",
                                 "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["rollouts"] == 4  # the four dimensions, K = 1

    def scripted(messages: list[dict], body: dict) -> str:
        return "essential_property: block sums\nsolution_principle: AM-GM\ncore_concept: blocks are geometric"

    with LoopbackServer(script=scripted) as server:
        result = runner.invoke(app, ["prim", "probe", "--student", "openai/scripted", "--dimensions", "discovery",
                                     "--base-url", server.openai_base_url, "--store", str(store)])
        assert result.exit_code == 0, result.output
    for student in ("local", "openai/scripted"):
        result = runner.invoke(app, ["prim", "score", "--judge", "local", "--student", student, "--max-tokens", "64",
                                     "--json", "--store", str(store)])
        assert result.exit_code in (0, 3), result.output  # 3: some judge reply was never JSON (a missing score)

    async def read():
        async with Store.open(store) as s:
            return (await s.rollouts(student="local"), await s.prim_scores(judge="local"),
                    {c.key for c in await s.calls()})
    rollouts, scores, calls = asyncio.run(read())
    assert {r.target for r in rollouts} == {"prim_discovery", "C1_direct", "prim_digestion", "prim_execution:gold"}
    assert all(r.call_key in calls for r in rollouts)
    judged = [s for s in scores if s.student == "openai/scripted"]
    assert len(judged) == 1 and judged[0].call_keys and set(judged[0].call_keys) <= calls
    for s in scores:
        assert (s.status == "scored" and s.score is not None) or (s.status == "missing" and s.reason and s.score is None)
