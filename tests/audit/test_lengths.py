"""Milestone solve rate by gold answer length (the paper's length analysis, Appendix N; issue 47 item 6),
on five real families of the release (tests/data/families_sample.jsonl, credited in tests/data/README.md)
with Stage 0 counts made up here so that every bin is worked out by hand. The gold lengths, in characters:
b36a1161 60 and 8 (its milestone 1 restates the answer: the leak rule leaves it out, so the family is out
whole); e8934cce 16, 7, 3; 6553b443 37, 3; f8a3e468 33, 7; a81a70ce 13, 13, 12."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.audit import lengths as lg
from oracleladder.cli import app
from oracleladder.report.plots import length_figure

DATA = Path(__file__).resolve().parents[1] / "data"
S = "student"
# per family (in the file's order), n_correct of 8 per milestone index; None: that milestone not run
STAGE0 = [(5, 0), (2, 0, 1), (0, 3), (1, None), (0, 4, 0)]


async def build(tmp: Path) -> Path:
    store = tmp / "s.sqlite"
    pids = [json.loads(line)["pid"] for line in (DATA / "families_sample.jsonl").read_text().splitlines()[:5]]
    panel = tmp / "stage0.jsonl"
    panel.write_text("".join(json.dumps({"model": S, "pid": pid, "milestone": i, "n_correct": n, "k": 8}) + "\n"
                             for pid, row in zip(pids, STAGE0) for i, n in enumerate(row) if n is not None))
    async with Experiment(store) as ex:
        await ex.import_families(DATA / "families_sample.jsonl")
        await ex.import_panels([panel], max_tokens=4096)
    return store


async def _by_length(store: Path, tau: int, cuts: tuple[int, ...]) -> lg.SolveByLength:
    async with Experiment(store) as ex:
        families, results, _ = await ex.results(S)
    return lg.solve_by_length(S, "K = 8", families, results, tau=tau, cuts=cuts)


async def test_the_bins_by_hand(tmp_path: Path) -> None:
    store = await build(tmp_path)
    r = await _by_length(store, 1, lg.BINS)
    # <= 20: 16 (2/8 solved), 7 (0), 3 (1), 3 (3), 13 (0), 13 (4), 12 (0): 4 of 7; 21-60: 37 (0), 33 (1): 1 of 2
    assert [(b.label, b.milestones, b.solved) for b in r.bins] == [("<= 20", 7, 4), ("21-60", 2, 1), ("> 60", 0, 0)]
    assert r.bins[0].rate == 4 / 7 and r.bins[2].rate is None
    assert (r.families, r.left_out, r.median_length) == (4, 1, 13)  # 3, 3, 7, 12, 13, 13, 16, 33, 37
    # tau = 2: 16 (2), 3 (3), 13 (4) of the short ones; none of the two long ones (0, 1)
    assert [b.solved for b in (await _by_length(store, 2, lg.BINS)).bins] == [3, 0, 0]
    # cut at 10 and 40: <= 10: 7, 3, 3 (2 solved); 11-40: 16, 37, 33, 13, 13, 12 (3 solved)
    other = await _by_length(store, 1, (10, 40))
    assert [(b.label, b.milestones, b.solved) for b in other.bins] == [("<= 10", 3, 2), ("11-40", 6, 3), ("> 40", 0, 0)]
    text = "\n".join(lg.markdown([r]))
    assert "| <= 20 characters | 4 of 7 (57.1%) |" in text and "| > 60 characters | 0 of 0 (—) |" in text
    assert "4 families pooled, 1 left out" in text and "median gold length 13 characters" in text
    _, _, drawn = length_figure([(S, [(b.label, b.solved, b.milestones) for b in r.bins])])
    assert drawn[S] == [pytest.approx(400 / 7), 50.0, None]


def test_bins_spelled_wrong_are_refused() -> None:
    assert lg.parse_bins("20,60") == (20, 60) and lg.bin_labels((5,)) == ["<= 5", "> 5"]
    for text in ("60,20", "0,5", "a,b", ""):
        with pytest.raises(ValueError):
            lg.parse_bins(text)


def test_ladder_audit_lengths(tmp_path: Path) -> None:
    store = asyncio.run(build(tmp_path))
    png = tmp_path / "lengths.png"
    result = CliRunner().invoke(app, ["audit", "lengths", "--student", S, "--store", str(store), "--bins", "10,40",
                                      "--figure", str(png), "--json"])
    assert result.exit_code == 0, result.output
    [shown] = json.loads(result.stdout)
    assert [(b["milestones"], b["solved"]) for b in shown["bins"]] == [(3, 2), (6, 3), (0, 0)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = CliRunner().invoke(app, ["audit", "lengths", "--student", S, "--store", str(store), "--bins", "40,10"])
    assert bad.exit_code == 2 and "the cut points rise" in bad.output
