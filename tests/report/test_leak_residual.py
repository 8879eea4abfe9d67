"""Appendix S's C3 leak residual in the report: per student, the C3-only (Answers-Needed) solves on
families whose milestone gold restates the parent answer; on a store made here and counted by hand."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators import family_leak_level
from tests.helpers.composition import WRONG, boxed, gradable

FULL, NO_C3 = "openai/full", "openai/no-c3"


def test_the_leak_residual_is_counted_by_hand(tmp_path: Path, release_data: Path) -> None:
    """Three families; on the first a milestone's gold is made the parent answer (a strict leak). The
    student solves every milestone, fails C1 and C2 everywhere, and solves C3 on the first two: two
    C3-only solves, one of them on the leaking family. A second student probed without C3 has no
    residual."""
    leaky, clean, unsolved = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                              if gradable(f) and family_leak_level(f) is None][:3]
    first = leaky.tested()[0][0]
    leaky.milestones[first] = leaky.milestones[first].model_copy(update={"answer": leaky.parent_answer})
    assert family_leak_level(leaky) == "strict"
    fams = [leaky, clean, unsolved]
    path = tmp_path / "families.jsonl"
    write_jsonl(path, (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    imported = CliRunner().invoke(app, ["import", str(path), "--store", str(store)])
    assert imported.exit_code == 0, imported.output
    golds = {m.prompt: m.answer for f in fams for _, m in f.tested()}

    def student(messages: list[dict], body: dict) -> str:
        text = messages[-1]["content"]
        if text in golds:
            return boxed(golds[text])
        given = "The following sub-goals have been solved" in text  # C3: the roadmap with its gold answers
        return next((boxed(f.parent_answer) for f in (leaky, clean) if given and f.parent_prompt in text), WRONG)

    with LoopbackServer(script=student) as server:
        for name, more in ((FULL, []), (NO_C3, ["--conditions", "C1", "--conditions", "C2"])):
            probed = CliRunner().invoke(app, ["probe", "--student", name, "--k", "2", "--store", str(store),
                                              "--base-url", server.openai_base_url, *more])
            assert probed.exit_code == 0, probed.output
    out = tmp_path / "out"
    report = CliRunner().invoke(app, ["report", "--student", FULL, "--student", NO_C3, "--store", str(store),
                                      "--out", str(out)])
    assert report.exit_code == 0, report.output
    residual = json.loads((out / "report.json").read_text())["leak_residual"]
    assert residual == {FULL: {"c3_only": 2, "leaking": 1, "by_level": {"strict": 1}, "pids": [leaky.pid]}}
    md = (out / "report.md").read_text()
    assert f"| {FULL} | 2 | 1 | strict 1 | {leaky.pid} |" in md
    assert f"Across the panel: 1 C3-only solves on leaking families. Not available for {NO_C3}: C3 not run." in md

    only = CliRunner().invoke(app, ["report", "--student", NO_C3, "--store", str(store), "--out", str(tmp_path / "o2")])
    assert only.exit_code == 0, only.output
    assert json.loads((tmp_path / "o2" / "report.json").read_text())["leak_residual"] == {}
    assert "Not available: no student with C3 results on a math roadmap set." in (tmp_path / "o2" / "report.md").read_text()
