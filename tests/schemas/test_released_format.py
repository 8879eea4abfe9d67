"""The released record format: read, validated, and written back field for field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.schemas import Family, MilestoneType, to_released
from oracleladder.schemas.jsonl import InputError, read_jsonl


def test_every_record_round_trips_field_for_field(release_data: Path) -> None:
    path = release_data / "families_sample.jsonl"
    originals = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    families = list(read_jsonl(path, Family))
    assert len(families) == len(originals) == 55
    for original, family in zip(originals, families):
        assert to_released(family) == original


def test_corrections_stay_in_their_own_fields(release_data: Path) -> None:
    families = {f.pid: f for f in read_jsonl(release_data / "families_sample.jsonl", Family)}
    fam = families["a0759695-e032-4efa-865b-029ede77d79e"]
    assert fam.parent_answer == "\\frac{56\\pi}{15}"
    assert fam.reference_answer() == "\\frac{56\\pi}{15}"
    assert fam.reference_answer(use_corrections=True) == "\\frac{16\\pi}{15}"
    assert fam.milestone_gold_invalid == [0, 1, 3]
    assert [i for i, _ in fam.tested(use_corrections=True)] == [
        i for i in range(len(fam.milestones)) if i not in {0, 1, 3}
    ]
    assert all(m.type is not MilestoneType.INTEGRATE for _, m in fam.tested())


def test_bad_lines_name_file_line_and_field(tmp_path: Path, release_data: Path) -> None:
    good = (release_data / "families_sample.jsonl").read_text().splitlines()[0]
    record = json.loads(good)
    del record["milestones"][1]["answer"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good + "\n\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:3: field 'milestones\.1\.answer': Field required"):
        list(read_jsonl(bad, Family))

    broken = tmp_path / "broken.jsonl"
    broken.write_text(good + "\n{not json\n")
    with pytest.raises(InputError, match=r"broken\.jsonl:2: not valid JSON"):
        list(read_jsonl(broken, Family))

    record = json.loads(good)
    record["milestones"][0]["type"] = "GUESS"
    typed = tmp_path / "typed.jsonl"
    typed.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match=r"typed\.jsonl:1: field 'milestones\.0\.type'"):
        list(read_jsonl(typed, Family))


def test_cli_import_then_export_gives_back_every_record(tmp_path: Path, release_data: Path) -> None:
    from typer.testing import CliRunner

    from oracleladder.cli import app

    source = release_data / "families_sample.jsonl"
    store, out = tmp_path / "exp.sqlite", tmp_path / "out.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["import", str(source), "--store", str(store)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["export", "--out", str(out), "--store", str(store)])
    assert result.exit_code == 0, result.output
    originals = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert exported == originals


def test_cli_import_reports_the_bad_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oracleladder.cli import app

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pid": "x"}\n')
    result = CliRunner().invoke(app, ["import", str(bad), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2
    assert "bad.jsonl:1: field 'parent_prompt': Field required" in result.output
