"""The verdict gate: the three graders give, on every item below, the verdict recorded from the
grading code before issue 36 (0a26578; tests/data/verdicts_gate.jsonl, see the data README).
Items: every released response, the judged sample, long answers built from the released responses
(oracleladder/testing/answers.py: one response lengthened, against each family target's gold), and
answers glued from several responses' tails (many boxes: the compound-answer loop's worst case).

Record again only when a verdict is meant to change, and say why:
    PYTHONPATH=<checkout> python tests/verify/test_gate.py --record
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.models import Verdict
from oracleladder.schemas.types import Label
from oracleladder.testing.answers import ReleasedAnswers
from oracleladder.verify.core import verify_inprocess
from oracleladder.verify.extract import all_boxed

DATA = Path(__file__).resolve().parents[1] / "data"  # tests/data
RECORDED = DATA / "verdicts_gate.jsonl"
GRADERS = ("paper", "strict", "extended")
# every item graded three ways: tens of seconds of CPU, so out of the fast lane (run it alone after a
# change to grading: python -m pytest -q tests/verify/test_gate.py)
pytestmark = pytest.mark.integration

# Items whose recorded verdict is a crash, reported by the worker as "parse error: TypeError" with
# nothing extracted: an answer holding a labelled tuple, `(a, m, n) = (2, m, 2^t m), 64`, parses as
# an equation between a tuple and a set, and the extended rule for equations subtracted the one from
# the other (issue 36), in the compound-answer loop (strict and extended) or on the last box
# (extended). Each is now NOT_ACCEPT "not equivalent" with its last box: the label is the recorded one.
CRASHED = {
    **{f"glued:{key}": "a join with a labelled tuple, against an equation gold" for key in (
        "c56480de-fc2c-43a5-b4eb-3d741ec4c187#m0", "9af3ab3b-5dac-478e-867b-c1fface87836#m0",
        "9af3ab3b-5dac-478e-867b-c1fface87836#m1", "ae95e7fc-5735-4e66-80ef-25b5a43e6295#m0",
        "2b542214-3494-4e63-813c-14b0211f6773#m0", "db5099fe-54ac-4155-97d7-218d507a7d8d#m0",
        "0ad0ce27-fd66-4468-b84f-4cc829a265a3#m0")},
    "scale:c52e7627-1521-49a3-937b-e10869b60336#m0#1": "last box `(x, y) = (7.5, 12.5) and (1.5, 0.5)` (extended)",
}


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def items() -> list[dict[str, Any]]:
    """Every item of the gate, each {id, response, gold, problem}; deterministic."""
    rows = [json.loads(line) for line in (DATA / "responses_sample.jsonl").open()]
    out = [{"id": f"responses:{r['pid']}:{r['condition']}:{r['rollout']}", "response": r["response_tail"],
            "gold": r["gold"], "problem": ""} for r in rows]
    out += [{"id": f"judged:{j['case_id']}", "response": j["response_tail"], "gold": j["canonical"], "problem": ""}
            for j in map(json.loads, (DATA / "judged_sample.jsonl").open())]
    answers = ReleasedAnswers(rows, budget_scale=4.0)
    corpus = "\n\n".join(r["response_tail"] for r in rows)
    for family in read_jsonl(DATA / "families_sample.jsonl", Family):
        targets = [("C1_direct", family.reference_answer())]
        targets += [(f"m{i}", m.answer) for i, m in enumerate(family.milestones)]
        for target, gold in targets:
            for k in range(2):
                key = f"{family.pid}#{target}#{k}"
                out.append({"id": f"scale:{key}", "response": answers(family.pid, key),
                            "gold": gold, "problem": family.parent_prompt})
            h = _seed(f"glued#{family.pid}#{target}")
            glued = (corpus[h % len(corpus):] + corpus)[:3000 + h % 6000] + f"\n\nSo the answer is \\boxed{{{h % 97}}}."
            out.append({"id": f"glued:{family.pid}#{target}", "response": glued, "gold": gold,
                        "problem": family.parent_prompt})
    return out


def _digest(item: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([item["response"], item["gold"], item["problem"]]).encode()).hexdigest()[:16]


def _row(v: Verdict) -> list[Any]:
    return [v.label.value, v.reason, v.extracted]


def record() -> None:
    """Grade every item as a worker does (an exception is the verdict "parse error: <type>")."""
    with RECORDED.open("w") as f:
        for item in items():
            line: dict[str, Any] = {"id": item["id"], "input": _digest(item)}
            for grader in GRADERS:
                try:
                    v = verify_inprocess(item["response"], item["gold"], grader=grader, problem=item["problem"])
                except Exception as e:  # what the worker reports for a crash
                    v = Verdict(Label.NOT_ACCEPT, f"parse error: {type(e).__name__}", None)
                line[grader] = _row(v)
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def gate() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    recorded = [json.loads(line) for line in RECORDED.open()]
    built = items()
    assert [r["id"] for r in recorded] == [i["id"] for i in built]
    assert [r["input"] for r in recorded] == [_digest(i) for i in built], "the gate's items changed: record again"
    return list(zip(built, recorded))


@pytest.mark.parametrize("grader", GRADERS)
def test_verdicts_are_the_recorded_ones(gate, grader: str) -> None:
    differ = []
    for item, recorded in gate:
        got = _row(verify_inprocess(item["response"], item["gold"], grader=grader, problem=item["problem"]))
        want = recorded[grader]
        if item["id"] in CRASHED and want[1] == "parse error: TypeError":
            want = [want[0], "not equivalent", all_boxed(item["response"])[-1]]  # the label stays
        if got != want:
            differ.append((item["id"], recorded[grader], got))
    assert differ == []


def test_the_listed_crashes_are_all_the_recorded_ones(gate) -> None:
    crashed = {r["id"] for _, r in gate if any(r[g][1].startswith("parse error: TypeError") for g in GRADERS)}
    assert crashed == set(CRASHED)


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    record()
