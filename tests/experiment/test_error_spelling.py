"""An error names the argument as the caller spells it (issue 43): the Python API `base='nope'`, the
CLI `--base nope`; one message, each surface its own spelling (`experiment.errors.Arg`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.experiment import ExperimentError

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house"
S = "openai/student"


def _store(tmp_path: Path) -> Path:
    shutil.copy(BEFORE / "before.sqlite", tmp_path / "s.sqlite")
    return tmp_path / "s.sqlite"


async def test_the_python_api_names_its_arguments_not_the_cli_s_options(tmp_path: Path) -> None:
    async with Experiment(_store(tmp_path)) as ex:
        with pytest.raises(ExperimentError) as raised:
            await ex.report([S], base="nope")
        assert str(raised.value) == f"base='nope' is not one of the report's columns ({S})"
        with pytest.raises(ExperimentError, match="^set_name and teacher exclude each other"):
            await ex.families(teacher="t", set_name="s")


def test_the_cli_names_its_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--student", S, "--base", "nope", "--store", str(_store(tmp_path)),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: --base nope is not one of the report's columns ({S})"
