"""A roadmap set exported with its Croissant metadata (issue 47 item 6), as the release ships its own
croissant.json: mlcroissant (the [croissant] extra) validates it and reads the records back, the real
families of tests/data/families_sample.jsonl (the release's, CC BY 4.0, credited in tests/data/README.md)."""

from __future__ import annotations

import hashlib
import importlib
import json
from datetime import date
from pathlib import Path

from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.experiment.croissant import RECORD_SET, write_metadata

DATA = Path(__file__).resolve().parents[1] / "data"
CC_BY = "https://creativecommons.org/licenses/by/4.0/"


def _records(meta: Path) -> list[dict]:
    # mlcroissant (rdflib, networkx: a quarter second) imported here: each pytest-xdist worker collects this module
    mlc = importlib.import_module("mlcroissant")
    dataset = mlc.Dataset(jsonld=meta)  # raises mlcroissant's ValidationError on an invalid document
    assert not dataset.metadata.issues.errors
    return list(dataset.records(RECORD_SET))


async def test_the_exported_set_passes_mlcroissants_validation(tmp_path: Path) -> None:
    out = tmp_path / "set" / "families.jsonl"
    out.parent.mkdir()
    async with Experiment(tmp_path / "s.sqlite") as ex:
        await ex.import_families(DATA / "families_sample.jsonl")
        n = await ex.export(out)
    meta = write_metadata(out, name="sample", description="The release's sample families.", license_url=CC_BY)
    assert meta == out.parent / "croissant.json"
    doc = json.loads(meta.read_text())
    assert doc["distribution"][0]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert doc["datePublished"] == date.today().isoformat() and doc["license"] == CC_BY
    records = _records(meta)
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == n == len(exported) == 55
    first = records[0]
    assert first[f"{RECORD_SET}/pid"].decode() == exported[0]["pid"]
    assert first[f"{RECORD_SET}/parent_answer"].decode() == exported[0]["parent_answer"]
    assert {r[f"{RECORD_SET}/pid"].decode() for r in records} == {r["pid"] for r in exported}


def test_ladder_export_croissant(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(DATA / "families_sample.jsonl"), "--store", str(store)]).exit_code == 0
    out = tmp_path / "families.jsonl"
    result = CliRunner().invoke(app, ["export", "--out", str(out), "--store", str(store), "--croissant", "--license", CC_BY])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "croissant.json").read_text())
    assert doc["name"] == "families" and "55 families" in doc["description"]
    assert len(_records(tmp_path / "croissant.json")) == 55
    alone = CliRunner().invoke(app, ["export", "--out", str(out), "--store", str(store), "--name", "x"])
    assert alone.exit_code == 2 and "give --croissant too" in alone.output
