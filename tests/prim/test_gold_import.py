"""`ladder prim import`: hand-written gold primitives of released families go into the store with
their solutions; a bad line is one error naming file:line and imports nothing; --field maps columns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import Store


def _stored(path: Path):
    async def read():
        async with Store.open(path) as s:
            return await s.primitives(), await s.solutions()
    return asyncio.run(read())


def test_gold_primitives_import_with_their_families_routed(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["prim", "import", str(release_data / "prim_gold.jsonl"), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "imported 4 gold primitives" in result.output
    primitives, solutions = _stored(store)
    assert [(p.pid[:8], p.provenance, p.family) for p in primitives] == [
        ("f8a3e468", "gold", "RECAST"), ("de4b7c19", "gold", "RECAST"), ("5cf6d4d9", "gold", "RECAST"),
        ("85b872e8", "gold", "ARGUMENT")]
    assert primitives[0].secondary_types == ["extremal_principle"]
    assert len(solutions) == 4 and "49 (t + 1/t + 2)" in solutions["f8a3e468-191f-474b-9353-04d5d1e32347"]


def test_a_bad_line_is_one_error_naming_file_and_line_and_imports_nothing(tmp_path: Path, release_data: Path) -> None:
    store, bad = tmp_path / "s.sqlite", tmp_path / "gold.jsonl"
    lines = (release_data / "prim_gold.jsonl").read_text().splitlines()
    third = json.loads(lines[2])
    third["primary_type"] = "counting"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(third), lines[3]]) + "\n")
    result = CliRunner().invoke(app, ["prim", "import", str(bad), "--store", str(store)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {bad}:3: field 'primary_type': Value error, unknown primitive type 'counting'; the taxonomy's keys: "
        "reformulation, hidden_structure, reduction_or_embedding, duality_or_representation, theorem_applicability, "
        "construction_or_witness, extremal_principle, invariant_or_monotonicity, obstruction_or_contradiction, "
        "induction_or_recursion, computation_only"]
    assert _stored(store) == ([], {})


def test_field_maps_other_column_names(tmp_path: Path) -> None:
    store, gold = tmp_path / "s.sqlite", tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": 7, "kernel": "blocks are geometric", "type": "invariant_or_monotonicity",
                                "rationale": "a full proof"}) + "\n")
    args = ["prim", "import", str(gold), "--store", str(store), "--field", "pid=id", "--field", "core_concept=kernel",
            "--field", "primary_type=type", "--field", "solution=rationale"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    primitives, solutions = _stored(store)
    assert [(p.pid, p.core_concept, p.family) for p in primitives] == [("7", "blocks are geometric", "WITNESS")]
    assert solutions == {"7": "a full proof"}
    result = CliRunner().invoke(app, [*args[:5], "--field", "kernel"])
    assert result.exit_code == 2 and "--field 'kernel': expected NAME=COLUMN" in result.output


def test_a_gold_primitive_stating_the_answer_is_listed_and_left_out(tmp_path: Path, release_data: Path) -> None:
    """The teacher primitives' leak check, on golds: f8a3e468's answer is 196, a gold that gives it is
    left out with its reason (its solution kept); the three others go in checked."""
    store, gold = tmp_path / "s.sqlite", tmp_path / "gold.jsonl"
    assert CliRunner().invoke(app, ["import", str(release_data / "families_sample.jsonl"),
                                    "--store", str(store)]).exit_code == 0
    lines = (release_data / "prim_gold.jsonl").read_text().splitlines()
    told = json.loads(lines[0])
    told["core_concept"] += " The minimum comes out as 196."
    gold.write_text("\n".join([json.dumps(told), *lines[1:]]) + "\n")
    result = CliRunner().invoke(app, ["prim", "import", str(gold), "--store", str(store)])
    said = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert (f"gold primitive of {told['pid']} left out [primitive_leak]: the primitive states the reference answer "
            "('196' is '196' or an equivalent form)") in said
    assert "imported 3 gold primitives" in said and "unchecked" not in said
    primitives, solutions = _stored(store)
    assert [p.pid[:8] for p in primitives] == ["de4b7c19", "5cf6d4d9", "85b872e8"] and len(solutions) == 4


@pytest.mark.parametrize("pid, shown", [(None, "null"), (["a", "b"], '["a", "b"]'), ("  ", '"  "'), (True, "true")])
def test_a_pid_that_is_not_text_or_a_number_is_one_line_naming_the_line(tmp_path: Path, release_data: Path,
                                                                       pid, shown: str) -> None:
    store, bad = tmp_path / "s.sqlite", tmp_path / "gold.jsonl"
    lines = (release_data / "prim_gold.jsonl").read_text().splitlines()
    second = {**json.loads(lines[1]), "pid": pid}
    bad.write_text("\n".join([lines[0], json.dumps(second)]) + "\n")
    result = CliRunner().invoke(app, ["prim", "import", str(bad), "--store", str(store)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {bad}:2: pid {shown} is not a problem's id (text or a number)"]
    assert _stored(store) == ([], {})  # nothing stored, no 'None'
