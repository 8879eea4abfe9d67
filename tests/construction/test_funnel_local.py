"""The whole construction on the embedded model (issue 13): `local` as teacher and anchor on three real
problems (as anchor on their released roadmaps too, since the small teacher may compile none). Whatever the small model writes, the pipeline finishes and every problem's fate is stored
with its reason. Bounded for 2 cores like tests/compiler/test_local.py (64 teacher tokens, K=1, 32 anchor tokens)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import parse_model
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]

PIDS = ["3665e4ec-17a1-4813-ac78-59a216ef7d70", "f8a3e468-191f-474b-9353-04d5d1e32347",
        "55e89ebf-3f20-4c95-bc8d-d7db30987784"]


@pytest.mark.timeout(900)
def test_local_teacher_and_anchor_build_a_set_with_every_fate_stored(release_data: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()]
    pool = tmp_path / "pool.csv"  # a CSV pool with AIME-style names
    with pool.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "problem", "answer"])
        for r in records:
            if r["pid"] in PIDS:
                writer.writerow([r["pid"], r["parent_prompt"].split("Problem:\n", 1)[1].strip(), r["parent_answer"]])
    store = str(tmp_path / "local.sqlite")
    runner = CliRunner()
    compiled = runner.invoke(app, ["compile", str(pool), "--teacher", "local", "--store", store, "--max-tokens", "64",
                                   "--max-attempts", "2", "--concurrency", "3", "--json"])
    source = "/".join(parse_model("local"))
    n_compiled = json.loads(compiled.stdout)["compiled"]
    assert compiled.exit_code == (0 if n_compiled else 1), compiled.output  # a compile of nothing fails
    if n_compiled:
        screened = runner.invoke(app, ["screen", "--anchor", "local", "--source", source, "--k", "1",
                                       "--max-tokens", "32", "--set", "local", "--store", store])
        assert screened.exit_code == 0, screened.output
        where = ["--set", "local"]
    else:  # the small teacher compiled nothing: the funnel still tells every problem's fate
        where = ["--source", source]
    result = runner.invoke(app, ["funnel", *where, "--json", "--store", store])
    assert result.exit_code == 0, result.output
    funnel = json.loads(result.stdout)
    assert funnel["candidates"] == 3 and funnel["final"] + len(funnel["dropped"]) == 3
    assert {d["pid"] for d in funnel["dropped"]} <= set(PIDS)
    assert all(d["stage"] and d["cause"] and d["reason"].strip() for d in funnel["dropped"])

    # the anchor side on the same problems' released roadmaps, whatever the teacher managed
    released = tmp_path / "released.jsonl"
    released.write_text("".join(json.dumps(r) + "\n" for r in records if r["pid"] in PIDS))
    assert runner.invoke(app, ["import", str(released), "--store", store]).exit_code == 0
    screened = runner.invoke(app, ["screen", "--anchor", "local", "--k", "1", "--max-tokens", "32", "--set", "re",
                                   "--json", "--store", store])
    assert screened.exit_code == 0, screened.output
    funnel = json.loads(runner.invoke(app, ["funnel", "--set", "re", "--json", "--store", store]).stdout)
    assert funnel["candidates"] == 3 and funnel["final"] + len(funnel["dropped"]) == 3
    assert all(d["reason"].strip() for d in funnel["dropped"])
