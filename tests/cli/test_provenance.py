"""A cached rerun reuses the answers of the run that paid for them and never takes them over (issue 43,
item 3): after a probe and three cached reruns of a fake/ student, every rollout keeps the
first run, `ladder runs` lists what each rerun reused, `ladder report --run FIRST` reports them, its
report.json, report.md and HTML provenance count the first run's tokens and say the answers were reused,
and
``to_pandas("rollout").run_id`` is the first run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.schemas.models import Rollout
from oracleladder.store import RunRecord, Store
from tests.helpers import fake

PIDS = ("f8a3e468", "de4b7c19")  # two families with short numeric answers
S = "fake/s"


def _overview(site: Path) -> dict:
    text = (site / "data" / "overview.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


async def _stored(store: Path) -> tuple[list[RunRecord], list[Rollout]]:
    async with Store.open(store) as s:
        return await s.runs("probe"), await s.rollouts(student=S)


async def _run_ids(store: Path) -> set[str]:
    async with Experiment(store) as ex:
        report = await ex.report([S])
    return set(report.to_pandas("rollout")["run_id"])


def test_three_cached_reruns_keep_the_run_that_paid(tmp_path: Path, release_data: Path, monkeypatch) -> None:
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if f.pid[:8] in PIDS]
    families, store, runner = tmp_path / "f.jsonl", tmp_path / "s.sqlite", CliRunner()
    write_jsonl(families, (to_released(f) for f in fams))
    assert runner.invoke(app, ["import", str(families), "--store", str(store)]).exit_code == 0
    probe = ["probe", "--student", S, "--k", "2", "--no-stage0", "--conditions", "C1_direct", "--store", str(store)]
    fake.script(monkeypatch, tmp_path, {"answer": r"\boxed{3}", "tokens_in": 40, "tokens_out": 6})
    for _ in range(4):
        probed = runner.invoke(app, probe)
        assert probed.exit_code == 0, probed.output

    (first, *reruns), rollouts = asyncio.run(_stored(store))
    assert len(reruns) == 3 and first.tokens_in > 0 and first.tokens_out > 0
    assert {r.run_id for r in rollouts} == {first.id} and len(rollouts) == 4
    assert (first.reused, [r.reused for r in reruns]) == (0, [4, 4, 4])

    listed = runner.invoke(app, ["runs", "--store", str(store)])
    assert listed.exit_code == 0, listed.output
    lines = {line.split("\t")[0]: line for line in listed.output.splitlines()}
    assert "reused" not in lines[first.id]
    assert all(lines[r.id].endswith("\treused 4 answers from earlier runs") for r in reruns)

    out = tmp_path / "report"
    made = runner.invoke(app, ["report", "--student", S, "--store", str(store), "--run", first.id, "--html",
                               "--out", str(out)])
    assert made.exit_code == 0, made.output
    made_by = json.loads((out / "report.json").read_text())["students"][S]
    assert made_by["conditions"]["C1_direct"]["rollouts"] == 4
    assert made_by["spent"] == {"runs": 1, "tokens_in": first.tokens_in, "tokens_out": first.tokens_out,
                                "cost_usd": 0.0, "reused": 4, "reruns": 3}
    assert (f"- {S}: made by 1 probe runs: tokens {first.tokens_in} in / {first.tokens_out} out, cost $0.0000; "
            "4 answers reused from the cache by 3 later runs") in (out / "report.md").read_text()
    prov = _overview(out / "html")["provenance"]["students"][S]
    assert (prov["runs"], prov["tokens_in"], prov["tokens_out"]) == (1, first.tokens_in, first.tokens_out)
    assert (prov["reused"], prov["reruns"]) == (4, 3)

    assert asyncio.run(_run_ids(store)) == {first.id}
