"""The student side of the primitive rung on released families: the primitive conditions run only
when asked, skip (and count) families without a primitive unless the KEY_MOVE fallback is asked
for, and the control draws only other families' primitives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.domains.math import MathDomain
from oracleladder.domains.math.primitive import family_primitive, primitive_prompt, without_primitive
from oracleladder.domains.math.prompts import description
from oracleladder.ladder import ProbeConfig
from oracleladder.schemas import LADDER, Family, MilestoneType, Primitive
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.testing import LoopbackServer


@pytest.fixture(scope="module")
def released(release_data: Path) -> list[Family]:
    return list(read_jsonl(release_data / "families_sample.jsonl", Family))[:8]


def _with_primitives(families: list[Family], every: int = 2) -> list[Family]:
    """Every ``every``-th family gets a primitive naming its own pid (so a prompt tells whose it shows)."""
    return [f.model_copy(update={"primitive": Primitive(text=f"Key idea of family {f.pid} here.",
                                                        provenance="teacher-primitives-only")})
            if i % every == 0 else f for i, f in enumerate(families)]


def test_the_default_conditions_do_not_include_the_rung(released):
    fams = _with_primitives(released)
    jobs = MathDomain().plan_jobs(fams, ProbeConfig(student="s", k=1, stage0=False), fams)
    assert {j.target for j in jobs} == set(LADDER.default)


def test_only_families_with_a_primitive_are_probed_and_the_control_borrows_another(released):
    families = _with_primitives(released)
    config = ProbeConfig(student="s", k=2, stage0=False, conditions=("C2_primitive", "C2_primitive_random"), seed=3)
    jobs = MathDomain().plan_jobs(families, config, families)
    have = [f.pid for f in families if f.primitive is not None]
    assert sorted({j.pid for j in jobs}) == sorted(have) and len(jobs) == 2 * 2 * len(have)
    assert without_primitive(families) == [f.pid for f in families if f.primitive is None]
    for job in jobs:
        user = job.messages[1]["content"]
        assert user.startswith(job.family.parent_prompt) and "the key idea of the solution" in user
        named = [pid for pid in have if f"family {pid} here" in user]
        assert len(named) == 1
        assert (named[0] == job.pid) is (job.target == "C2_primitive"), (job.pid, job.target)
    # the draw is seeded: the same seed gives the same donors, and the donor is among those with a primitive
    again = MathDomain().plan_jobs(families, config, families)
    assert [j.messages for j in again] == [j.messages for j in jobs]


def test_the_control_needs_another_family_with_a_primitive(released):
    families = _with_primitives(released, every=len(released))  # only the first has one
    with pytest.raises(ValueError, match="other family with a primitive"):
        primitive_prompt(families[0], "C2_primitive_random", families)
    with pytest.raises(ValueError, match="has no primitive"):
        primitive_prompt(families[1], "C2_primitive", families)


def test_the_key_move_fallback_is_marked_and_used_only_when_asked(released):
    family = next(f for f in released if any(m.type is MilestoneType.KEY_MOVE for _, m in f.tested()))
    assert family_primitive(family) is None
    fallback = family_primitive(family, fallback=True)
    first = next(m for _, m in family.tested() if m.type is MilestoneType.KEY_MOVE)
    assert (fallback.text, fallback.provenance) == (description(first), "key-move-fallback")
    msgs, _ = primitive_prompt(family, "C2_primitive", released, fallback=True)
    assert description(first) in msgs[1]["content"]


def test_probe_primitive_skips_and_counts_families_without_one(release_data: Path, tmp_path: Path):
    store = tmp_path / "s.sqlite"
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)]).exit_code == 0
    with LoopbackServer(script=lambda messages, body: "\\boxed{0}") as server:
        base = ["probe", "--student", "openai/s", "--base-url", server.openai_base_url, "--store", str(store),
                "--k", "1", "--no-stage0", "--limit", "3", "--conditions", "C1"]
        result = runner.invoke(app, base + ["--primitive"])
        assert result.exit_code == 0, result.output
        assert "skipped 3 families without a primitive" in result.output
        summary = json.loads(runner.invoke(app, base + ["--primitive", "--primitive-fallback", "--json"]).output
                             .strip().splitlines()[-1])
        assert summary["without_primitive"] == 0  # every released family here has a KEY_MOVE milestone
        code = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", server.openai_base_url, "--domain",
                                   "code", "--primitive", "--store", str(store)])
        assert code.exit_code == 2 and "has no condition C2-primitive" in code.output


def test_a_control_without_another_primitive_is_refused_in_one_line(released, tmp_path: Path):
    path, store = tmp_path / "two.jsonl", tmp_path / "s.sqlite"
    two = _with_primitives(released[:2], every=2)  # only the first has a primitive
    path.write_text("".join(f.model_dump_json() + "\n" for f in two))
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    result = runner.invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1",
                                 "--store", str(store), "--primitive"])
    assert result.exit_code == 2 and "C2-primitive-random needs another family with a primitive" in result.output
