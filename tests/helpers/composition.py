"""A store whose student has a composition gap: five released families probed through the loopback
server (Stage 0, C1-C3, K = 2) by a student that solves every milestone, fails the parent at every rung
on the first four and solves the fifth directly (the rubric review's tests and its HTML view); given
more students, each probed the same way with a wrong answer of its own."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.testing import LoopbackServer
from oracleladder.validators import reference_answer_problem
from oracleladder.verify import verify_inprocess

STUDENT = "openai/student"
WRONG = "\\boxed{987654321}"


def boxed(answer: str) -> str:
    return f"\\boxed{{{answer}}}"


def gradable(f: Family) -> bool:
    """A usable reference answer, and every gold (the parent's, each tested milestone's) accepted when boxed."""
    return (reference_answer_problem(f) is None and verify_inprocess(boxed(f.parent_answer), f.parent_answer).accepted
            and all(verify_inprocess(boxed(m.answer), m.answer).accepted for _, m in f.tested()))


def composition_gap_store(tmp_path: Path, release_data: Path,
                          students: Mapping[str, str] | None = None) -> tuple[Path, list[Family]]:
    """The store (tmp_path / "s.sqlite") and its five families, in the order described above; ``students``:
    each student probed and its wrong answer (STUDENT and WRONG by default)."""
    fams = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if gradable(f)][:5]
    assert len(fams) == 5
    path = tmp_path / "families.jsonl"
    write_jsonl(path, (to_released(f) for f in fams))
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(path), "--store", str(store)]).exit_code == 0
    golds = {m.prompt: m.answer for f in fams for _, m in f.tested()}

    for name, wrong in (students or {STUDENT: WRONG}).items():
        with LoopbackServer(script=_student(fams, golds, wrong)) as server:
            result = CliRunner().invoke(app, ["probe", "--student", name, "--k", "2", "--store", str(store),
                                              "--base-url", server.openai_base_url])
        assert result.exit_code == 0, result.output
    return store, fams


def _student(fams: list[Family], golds: dict[str, str], wrong: str):
    def student(messages: list[dict], body: dict) -> str:
        text = messages[-1]["content"]
        if text in golds:
            return boxed(golds[text])
        return boxed(fams[4].parent_answer) if fams[4].parent_prompt in text else wrong
    return student
