"""A ladder condition and a PRIM dimension are each one declaration and one prompt file (issue 44): the toy
ones of tests/helpers/toy.py, declared for these tests only, are probed with their prompt, counted in the
report (Table 21, the contrasts, PRIM's Table 1), written to and read from the release's panel records, and
named by `--help`; withdrawn, the toolkit knows them no more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracleladder import Experiment
from oracleladder.experiment.endpoint import as_endpoint
from oracleladder.experiment.panels import PanelRecord
from oracleladder.prim.dimensions import DIMENSIONS
from oracleladder.prompts import load
from oracleladder.schemas import LADDER
from tests.helpers import REPO
from tests.helpers.toy import declared

pytestmark = pytest.mark.integration  # each experiment starts its verifier pool


def _gold_families(release_data: Path) -> dict[str, str]:
    """The sample's families with a gold primitive (tests/data/prim_gold.jsonl): parent prompt -> answer."""
    pids = {json.loads(line)["pid"] for line in (release_data / "prim_gold.jsonl").read_text().splitlines()}
    rows = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()]
    return {r["parent_prompt"].rsplit("Problem:\n", 1)[-1].strip(): r["parent_answer"] for r in rows if r["pid"] in pids}


def _student(answers: dict[str, str], marker: str):
    """Right (the reference answer boxed) only where the prompt carries ``marker``; 0 elsewhere."""
    def answer(messages: list[dict], params: dict) -> str:
        user = messages[-1]["content"]
        right = next(a for problem, a in answers.items() if problem in user)
        return rf"So \boxed{{{right}}}" if marker in user else r"So \boxed{0}"
    return answer


async def test_a_declared_condition_is_probed_reported_and_goes_through_the_panels(
        tmp_path: Path, release_data: Path) -> None:
    answers = _gold_families(release_data)
    with declared():
        async with Experiment(tmp_path / "s.sqlite", workers=1) as ex:
            await ex.import_families(release_data / "families_sample.jsonl")
            families = [f.pid for f in await ex.roadmap_set("release")
                        if f.parent_prompt.rsplit("Problem:\n", 1)[-1].strip() in answers]
            await ex.probe(_student(answers, "TOY-CONDITION"), name="toy", k=1, conditions=["C1", "c2-toy"],
                           stage0=False, pids=families)
            written = await ex.write_report(await ex.report(["python/toy"]), tmp_path / "report")
            oracle = (await ex.export_panels("python/toy", tmp_path / "panels")).oracle
        async with Experiment(tmp_path / "other.sqlite", workers=1) as ex:
            await ex.import_families(release_data / "families_sample.jsonl")
            await ex.import_panels([oracle], student="panel/toy")
            imported = (await ex.report(["panel/toy"])).summary("panel/toy")

    n = len(families)
    assert n == 4
    toy = written["students"]["python/toy"]
    assert toy["conditions"]["C2_toy"] == {"families_run": n, "solved": n, "rollouts": n, "per_rollout_rate": 1.0}
    assert toy["conditions"]["C1_direct"]["solved"] == 0
    assert [c["contrast"] for c in toy["contrasts"]][-1] == "C2-toy vs C1"
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| C2-random | C2-generic | C2-primitive-random | C2-primitive | C2 | C3-mismatched | C3 | C2-toy | Any probe |" in md
    assert f"| python/toy | 0 | not run | not run | not run | not run | not run | not run | not run | {n} | 0 |" in md
    assert "| C3 vs C1 | C2-primitive vs C1 | C2-primitive-random vs C1 | C2-toy vs C1 |" in md
    records = [json.loads(line) for line in oracle.read_text().splitlines()]
    assert sorted((r["condition"], r["n_correct"]) for r in records if r["condition"] == "C2_toy") == [("C2_toy", 1)] * n
    assert imported["conditions"]["C2_toy"]["solved"] == n

    # withdrawn, the condition and its prompt are unknown again
    assert LADDER.lookup("C2-toy") is None and "C2_toy" not in LADDER.every
    with pytest.raises(ValueError, match="unknown condition 'C2_toy'"):
        PanelRecord(model="m", pid="p", condition="C2_toy", n_correct=0, k=1)
    with pytest.raises(KeyError, match="no prompt template 'toy_condition'"):
        load("toy_condition")


async def test_a_declared_dimension_is_probed_and_reported(tmp_path: Path, release_data: Path) -> None:
    answers = _gold_families(release_data)
    student = as_endpoint(_student(answers, "TOY-DIMENSION"), name="toy")
    with declared():
        async with Experiment(tmp_path / "s.sqlite", workers=1) as ex:
            await ex.import_families(release_data / "families_sample.jsonl")
            await ex.import_primitives(release_data / "prim_gold.jsonl")
            probed = await ex.prim_probe(student, dimensions=("generation", "toy"))
            await ex.prim_report("python/toy", "none/judge", out=tmp_path / "prim")
    assert probed.rollouts == 8 and "toy" not in DIMENSIONS.names
    md = (tmp_path / "prim" / "report.md").read_text()
    assert "## Table 1: the five dimensions" in md
    table1 = md.split("## Table 1", 1)[1].splitlines()
    header = next(line for line in table1 if line.startswith("| Discovery"))
    assert header == "| Discovery | Generation | Digestion | Execution | Toy | Dig. − Disc. | Exec. − Gen. |"
    cells = table1[table1.index(header) + 2].split(" | ")
    assert cells[1].startswith("0.00 [") and cells[4].startswith("100.00 [")  # Generation wrong, Toy right
    assert "| Family | discovery | generation | digestion | execution | toy |" in md  # Table 7


def test_help_names_the_declared_condition_and_dimension() -> None:
    """`--help` as a package declaring them before the command is loaded would show it."""
    def help_of(*command: str) -> str:
        code = "from tests.helpers.toy import declare; declare(); from oracleladder.cli import app; app()"
        done = subprocess.run([sys.executable, "-c", code, *command, "--help"], cwd=REPO, capture_output=True,
                              text=True, env={**os.environ, "COLUMNS": "400"}, timeout=120)
        assert done.returncode == 0, done.stderr
        return " ".join(done.stdout.split())

    probe = help_of("probe")
    assert "C3-mismatched, C2-primitive, C2-primitive-random, C2-toy (or the released names" in probe
    assert "C2_primitive_random, C2_toy); default all seven (code: C1, C2, C3)." in probe
    assert "discovery, generation, digestion, execution, toy; default all five." in help_of("prim", "probe")
