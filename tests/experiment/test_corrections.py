"""`ladder import --corrections`: the release's corrections.jsonl merged into the records' own
correction fields, on the released sample (whose records carry the corrections already: the test
strips them, imports the bare records with the file, and compares)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.experiment.files import apply_corrections
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import InputError, read_jsonl
from oracleladder.store import Store

CORRECTION_FIELDS = ("parent_answer_corrected", "correction_note", "milestone_gold_invalid")


def _bare(release_data: Path, out: Path) -> Path:
    """The sample's records without their correction fields."""
    records = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()]
    out.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in CORRECTION_FIELDS}) + "\n"
                           for r in records))
    return out


def _of_sample(release_data: Path, out: Path) -> Path:
    """The release's corrections of the sample's families (the release corrects six families more)."""
    pids = {f.pid for f in read_jsonl(release_data / "families_sample.jsonl", Family)}
    lines = (release_data / "corrections.jsonl").read_text().splitlines()
    out.write_text("".join(line + "\n" for line in lines if json.loads(line)["pid"] in pids))
    return out


def test_every_correction_lands_in_its_field(tmp_path, release_data):
    families = list(read_jsonl(_bare(release_data, tmp_path / "bare.jsonl"), Family))
    assert not any(f.parent_answer_corrected or f.milestone_gold_invalid for f in families)
    applied = apply_corrections(families, _of_sample(release_data, tmp_path / "corrections.jsonl"))
    assert len(applied) == 5  # four reference answers and one family's three milestone golds
    released = {f.pid: f for f in read_jsonl(release_data / "families_sample.jsonl", Family)}
    for f in families:  # the released records' own fields, where the release merged them
        assert [getattr(f, k) for k in CORRECTION_FIELDS] == [getattr(released[f.pid], k) for k in CORRECTION_FIELDS]
    by_pid = {f.pid: f for f in families}
    for c in applied:
        f = by_pid[c.pid]
        if c.field == "parent_answer":
            assert (f.parent_answer, f.parent_answer_corrected) == (c.original, c.corrected)
        else:
            assert c.field == "milestones[0,1,3].answer" and f.milestone_gold_invalid == [0, 1, 3]
            assert [f.milestones[i].answer for i in (0, 1, 3)] == c.original


async def _stored(path: Path) -> list[Family]:
    async with Store.open(path) as s:
        return await s.families()


def test_import_lists_each_correction_and_stores_it(tmp_path, release_data):
    store = tmp_path / "s.sqlite"
    corrections = _of_sample(release_data, tmp_path / "corrections.jsonl")
    r = CliRunner().invoke(app, ["import", str(_bare(release_data, tmp_path / "bare.jsonl")), "--store", str(store),
                                 "--corrections", str(corrections)])
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if line.startswith("corrected ")]
    assert said[0] == "corrected 713ff8c1-a520-4331-81b4-d395afaa1033 parent_answer: '48884' -> '49894'"
    assert len(said) == 5 and "with 5 corrections" in r.output
    assert ("corrected a0759695-e032-4efa-865b-029ede77d79e milestones[0,1,3].answer: golds "
            "['(x-1)(x+a+2)', '[-a-2,1]', '(a+3)^5'] marked invalid") in said

    fams = {f.pid: f for f in asyncio.run(_stored(store))}
    assert fams["713ff8c1-a520-4331-81b4-d395afaa1033"].parent_answer_corrected == "49894"
    assert fams["a0759695-e032-4efa-865b-029ede77d79e"].milestone_gold_invalid == [0, 1, 3]


def test_a_correction_of_an_unknown_pid_is_one_line_naming_it(tmp_path, release_data):
    store = tmp_path / "s.sqlite"
    r = CliRunner().invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store),
                                 "--corrections", str(release_data / "corrections.jsonl")])
    assert r.exit_code == 2
    [line] = r.output.strip().splitlines()
    assert line.startswith("error: ") and "a3a636a8-5002-454b-a9e5-2f85c44fa2d5" in line
    assert "6 correction(s) name a pid not among the families imported" in line
    assert not store.exists() or asyncio.run(_stored(store)) == []  # nothing imported


def test_a_correction_whose_original_is_not_the_records_is_refused(tmp_path, release_data):
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    wrong = tmp_path / "c.jsonl"
    wrong.write_text(json.dumps({"pid": families[0].pid, "field": "parent_answer", "original": "not it",
                                 "corrected": "1", "evidence": "e"}) + "\n")
    with pytest.raises(InputError, match="must turn the record's"):
        apply_corrections(families, wrong)
