"""The primitive rung with the real embedded model (SmolLM2-135M through llama-cpp-python, offline):
`ladder compile --primitives-only --teacher local` on three released families ends each family with a
stored primitive or stored failed attempts with their reasons, never a crash; a probe with C2-primitive
and its control then finishes on all three (the families the small teacher left without a primitive
take the documented KEY_MOVE fallback, asked for explicitly), every rollout stored.

Bounded for 2 cores: 64 tokens per teacher answer (128 once a cut-off reply is asked again), 2 attempts,
K = 1 and 32 tokens per student answer. The teacher's short replies fail the primitive's checks and a
long one is cut off, at this budget as at 256 (where the cut-off reply alone took 768 tokens)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import parse_model
from oracleladder.domains.math.primitive import family_primitive
from oracleladder.store import Store
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]

# three short released families, each with a KEY_MOVE milestone (the fallback's source)
PIDS = ["3665e4ec-17a1-4813-ac78-59a216ef7d70", "55e89ebf-3f20-4c95-bc8d-d7db30987784",
        "db5099fe-54ac-4155-97d7-218d507a7d8d"]


def _families(release_data: Path, out: Path) -> list[str]:
    lines = [line for line in (release_data / "families_sample.jsonl").read_text().splitlines()
             if json.loads(line)["pid"] in PIDS]
    out.write_text("\n".join(lines) + "\n")
    return [json.loads(line)["pid"] for line in lines]


async def _read(store_path: Path, student: str):
    async with Store.open(store_path) as store:
        return (await store.families("release"), await store.primitive_attempts(),
                await store.rollouts(student=student), await store.runs("probe"))


@pytest.mark.timeout(900)
def test_local_primitives_only_then_a_primitive_probe(release_data: Path, tmp_path: Path) -> None:
    store = tmp_path / "local.sqlite"
    pids = _families(release_data, tmp_path / "three.jsonl")
    assert len(pids) == 3
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(tmp_path / "three.jsonl"), "--store", str(store)]).exit_code == 0

    args = ["compile", "--primitives-only", "--teacher", "local", "--store", str(store), "--max-tokens", "64",
            "--max-attempts", "2", "--concurrency", "3", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["families"] == 3 and summary["compiled"] + len(summary["failed_why"]) == 3
    assert summary["requests"] >= 3 and summary["failures"] == 0

    provider, model = parse_model("local")
    teacher = f"{provider}/{model}"
    probe = runner.invoke(app, ["probe", "--student", "local", "--store", str(store), "--k", "1", "--max-tokens", "32",
                                "--no-stage0", "--conditions", "C2-primitive", "--conditions", "C2-primitive-random",
                                "--primitive-fallback", "--json"])
    assert probe.exit_code == 0, probe.output
    assert json.loads(probe.stdout.strip().splitlines()[-1])["without_primitive"] == 0

    families, attempts, rollouts, runs = asyncio.run(_read(store, "local"))
    for family in families:  # a primitive from the teacher, or every attempt failed with its reason
        mine = [a for a in attempts if a.pid == family.pid]
        assert mine and [a.attempt for a in mine] == list(range(len(mine))) and len(mine) <= 2, family.pid
        assert all(a.teacher == teacher for a in mine)
        if family.primitive is not None:
            assert mine[-1].passed and mine[-1].errors == [] and mine[-1].primitive == family.primitive.text
            assert family.primitive.provenance == "teacher-primitives-only"
        else:
            assert not any(a.passed for a in mine) and family.pid in summary["failed_why"]
            assert all(e["reason"].strip() for a in mine for e in a.errors), family.pid
            assert family_primitive(family, fallback=True).provenance == "key-move-fallback"
    assert sum(f.primitive is not None for f in families) == summary["compiled"]
    assert sorted((r.pid, r.target) for r in rollouts) == sorted(
        (p, c) for p in pids for c in ("C2_primitive", "C2_primitive_random"))
    assert runs[-1].config["primitive_fallback"] is True

    again = json.loads(runner.invoke(app, args).stdout)  # only the families still without one, from the store
    assert again["had_primitive"] == summary["compiled"] and again["requests"] == 0
