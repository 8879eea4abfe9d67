"""PRIM's figures (`prim.plots`), as `ladder prim report` writes them from the scripted PRIM run
(tests/prim/scripted.py): each draws the counts of report.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.prim.analysis import PrimReport, StudentPoint, across
from oracleladder.prim.plots import composition_figure, discovery_figure, quadrant_figure, tokens_figure
from tests.prim.scripted import JUDGE, STUDENT, scripted_store


@pytest.fixture(scope="module")
def reported(tmp_path_factory, release_data: Path) -> tuple[Path, PrimReport]:
    tmp = tmp_path_factory.mktemp("prim-plots")
    store = scripted_store(tmp, release_data).store
    out = tmp / "report"
    result = CliRunner().invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                      "--store", str(store)])
    assert result.exit_code == 0, result.output
    return out, PrimReport.model_validate(json.loads((out / "report.json").read_text()))

def test_prim_report_draws_figures_2_3_4_and_12_from_its_counts(reported) -> None:
    out, r = reported
    for name in ("figure2.png", "figure3.png", "figure4.png", "figure12.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bars = quadrant_figure(r).axes[0].patches
    assert [b.get_height() for b in bars] == list(r.table9.values()) == [1, 1, 1, 0, 0]
    # Figure 12: a box per side with answers, q1 to q3 as the report's quartiles
    ax = tokens_figure(r).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()][::-1]
    assert labels == [f"{name}: {side} (n={split[side].n})" for name, split in r.figure12.items()
                      for side in ("right", "wrong") if split[side].n]
    assert "execution (self): right (n=0)" not in labels and "execution (self): wrong (n=3)" in labels

def test_figures_2_and_3_draw_each_student(reported) -> None:
    _, r = reported
    points = across([r]) | {"openai/after": StudentPoint(discovery=None, generation=50.0, composition=dict.fromkeys(r.figure2, 0))}
    # Figure 2: D+G+ 1, D+G− 1, D−G+ 0, D−G− 2 of the student's 4 problems, as % of them
    bars = composition_figure(points).axes[0].patches
    assert [b.get_width() for b in bars if b.get_y() > 0.5] == [25.0, 25.0, 0.0, 50.0]
    # Figure 3: one point, at Discovery 50, Generation 25; the student without Discovery has none, and it says so
    ax = discovery_figure(points).axes[0]
    assert [list(o) for c in ax.collections for o in c.get_offsets()] == [[50.0, 25.0]]
    assert any("no point (a dimension not probed): openai/after" in t.get_text() for t in ax.texts)
