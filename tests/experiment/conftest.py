"""``families_file``: three released families with a usable reference answer, as a JSONL file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.validators import reference_answer_problem


@pytest.fixture(scope="module")
def families_file(release_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if not reference_answer_problem(f)]
    path = tmp_path_factory.mktemp("fams") / "families.jsonl"
    path.write_text("".join(line for line in (release_data / "families_sample.jsonl").open()
                            if json.loads(line)["pid"] in {f.pid for f in fams[:3]}))
    return path
