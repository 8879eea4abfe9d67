"""The replication view (paper Table 2, the explainer's Figure 6; issue 47 item 3): several roadmap sets
side by side, each for its own student at its own tau, on a store built here: the release's real 4K panel
of Qwen3-8B-Base on its sample families (tests/data/panels, credited in tests/data/README.md) as the main
set, and two small sets whose panels are made up so that every count is worked out by hand."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.experiment.replication import ReplicationSet, parse_set, replication
from oracleladder.report import replication as rep
from oracleladder.report.markdown import replication as replication_md
from oracleladder.report.tables import ReplicationColumn
from oracleladder.schemas.jsonl import InputError

DATA = Path(__file__).resolve().parents[1] / "data"
QWEN = "qwen3_8b_pre_rl"
ORDER = ("C1_direct", "C2_random", "C2_generic", "C2_descriptions", "C3_mismatched", "C3_gold_answers")


def _panel(path: Path, model: str, counts: dict[str, tuple[int, ...]]) -> Path:
    """One record per family and condition: counts[pid] gives n_correct of 8 in ORDER (None: not run)."""
    path.write_text("".join(json.dumps({"model": model, "condition": c, "pid": pid, "n_correct": n, "k": 8}) + "\n"
                            for pid, row in counts.items() for c, n in zip(ORDER, row) if n is not None))
    return path


async def build(tmp: Path) -> Path:
    store = tmp / "s.sqlite"
    lines = (DATA / "families_sample.jsonl").read_text().splitlines(keepends=True)
    pids = [json.loads(line)["pid"] for line in lines]
    (tmp / "math500.jsonl").write_text("".join(lines[:3]))
    (tmp / "aime.jsonl").write_text("".join(lines[3:5]))
    g0, g1, g2, h0, h1 = pids[:5]
    async with Experiment(store) as ex:
        await ex.import_families(DATA / "families_sample.jsonl", source="release")
        await ex.import_families(tmp / "math500.jsonl", source="math500")
        await ex.import_families(tmp / "aime.jsonl", source="aime")
        await ex.import_panels([DATA / "panels" / "oracle_panel_4k_qwen3_8b_pre_rl.jsonl"], source="release",
                               max_tokens=4096)
        # math500: C1, C2-random, C2-generic, C2, C3-mismatched, C3 of 8
        await ex.import_panels([_panel(tmp / "m.jsonl", "qwen3-8b", {g0: (3, 3, 2, 5, 3, 2), g1: (2, 0, 0, 3, 1, 8),
                                                                      g2: (0, 0, 0, 0, 0, 0)})],
                               source="math500", max_tokens=16384)
        # aime: no controls run
        await ex.import_panels([_panel(tmp / "a.jsonl", "qwen3-8b", {h0: (0, None, None, 1, None, 0),
                                                                      h1: (0, None, None, 0, None, 2)})],
                               source="aime", max_tokens=16384)
    return store


async def test_each_set_at_its_own_tau_by_hand(tmp_path: Path) -> None:
    store = await build(tmp_path)
    sets = [parse_set("release", QWEN), parse_set("math500,tau=3,student=qwen3-8b", QWEN),
            parse_set("aime,student=qwen3-8b", None)]
    assert sets[1] == ReplicationSet("math500", "qwen3-8b", 3)
    async with Experiment(store) as ex:
        cols = await replication(ex, sets)
    solved = [{c: (None if v is None else v.solved) for c, v in col.conditions.items()} for col in cols]
    # the release's panel: 25 families, C1 and C3 only; 5 with C1 >= 1 of 8, 11 with C3 >= 1 (tests/data/README.md)
    assert cols[0].n == 25 and solved[0] == dict(zip(ORDER, (5, None, None, None, None, 11)))
    # math500 at tau = 3: C1 g0 (3); C2-random g0 (3); C2-generic none; C2 g0 (5), g1 (3); C3-mismatched g0 (3); C3 g1 (8)
    assert cols[1].n == 3 and solved[1] == dict(zip(ORDER, (1, 1, 0, 2, 1, 1)))
    # aime at tau = 1: C2 h0; C3 h1
    assert cols[2].n == 2 and solved[2] == dict(zip(ORDER, (0, None, None, 1, None, 1)))
    assert cols[1].setting.startswith("K = 8, max_tokens = 16384")

    text = "\n".join(replication_md(cols))
    assert "| Condition | release (n=25) | math500 (n=3) | aime (n=2) |" in text
    assert "| C1 | 5 (20.0%) | 1 (33.3%) | 0 (0.0%) |" in text
    assert "| C2-random | not run | 1 (33.3%) | not run |" in text
    assert "| C3 | 11 (44.0%) | 1 (33.3%) | 1 (50.0%) |" in text
    assert "- math500: qwen3-8b, tau = 3, K = 8, max_tokens = 16384" in text

    # the same sets at tau = 1 for math500: every count it changes is the hand count at 1 of 8
    async with Experiment(store) as ex:
        [at1] = await replication(ex, [ReplicationSet("math500", "qwen3-8b", 1)])
    assert {c: v.solved for c, v in at1.conditions.items()} == dict(zip(ORDER, (2, 1, 1, 2, 2, 2)))

    paths = rep.write_replication(cols, tmp_path / "out")
    assert [p.name for p in paths] == list(rep.FILES)
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(paths[1].read_text())[1]["tau"] == 3


def test_the_figure_draws_each_sets_share() -> None:
    cols = [ReplicationColumn.model_validate({
        "source": s, "student": "q", "tau": t, "setting": "K = 8", "n": n,
        "missing": {"ungraded": {}, "failed": {}, "ungraded_total": 0, "failed_total": 0},
        "conditions": {c: (None if k is None else {"families_run": n, "solved": k, "rollouts": 8 * n,
                                                   "per_rollout_rate": 0.5}) for c, k in zip(ORDER, counts)}})
        for s, t, n, counts in (("main", 1, 4, (1, 1, 1, 2, 1, 3)), ("aime", 1, 2, (0, None, None, 1, None, 1)))]
    from oracleladder.report.plots import replication_figure
    _, ax, drawn = replication_figure(cols)
    assert drawn["main (n=4): q, tau = 1"]["C3_gold_answers"] == 75.0 and drawn["aime (n=2): q, tau = 1"]["C2_random"] is None
    assert drawn["aime (n=2): q, tau = 1"]["C2_descriptions"] == 50.0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["C1", "C2-random", "C2-generic", "C2", "C3-mismatched", "C3"]


@pytest.mark.parametrize(("text", "said"), [
    ("math500,tau=0", "tau is a whole number of at least 1, not '0'"),
    ("math500,t=3", "'t=3' is not one of tau=..., student=..., once each"),
    ("math500,tau=3,tau=2", "'tau=2' is not one of"),
    (",tau=3", "it names no set"),
])
def test_a_set_spelled_wrong_says_how_to_spell_it(text: str, said: str) -> None:
    with pytest.raises(InputError, match=said.replace("(", r"\(").replace(".", r"\.")):
        parse_set(text, "s")
    with pytest.raises(InputError, match="give its student=NAME, or --student"):
        parse_set("math500", None)


def test_ladder_replication_writes_the_table_and_the_figure(tmp_path: Path) -> None:
    store = asyncio.run(build(tmp_path))
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["replication", "--store", str(store), "--out", str(out), "--student", "qwen3-8b",
                                      "--source", f"release,student={QWEN}", "--source", "math500,tau=3",
                                      "--source", "aime"])
    assert result.exit_code == 0, result.output
    assert "| C2 | not run | 2 (66.7%) | 1 (50.0%) |" in (out / "replication.md").read_text()
    assert (out / "replication.png").is_file()
    bad = CliRunner().invoke(app, ["replication", "--store", str(store), "--source", "aime,tau=x", "--student", "q"])
    assert bad.exit_code == 2 and "tau is a whole number" in bad.output
    unknown = CliRunner().invoke(app, ["replication", "--store", str(store), "--source", "aime", "--student", "nobody"])
    assert unknown.exit_code == 2 and "holds no rollouts of student 'nobody'" in unknown.output
