"""Checks on the 400 real responses: read-and-checked cases, and extended accepts every strict accept."""

import json
from pathlib import Path

import pytest

from oracleladder.schemas.types import Label
from oracleladder.verify import verify_many
from oracleladder.verify.graders import exact_match

# (pid prefix, condition, rollout, accepted) -- each read by hand, see docs/verifier-agreement.md
CHECKED = [
    ("d5e3b091", "C3_gold", 0, True),  # w=-8, x=-12/5, ... named, in gold order
    ("d5e3b091", "C3_gold", 1, True),  # same as an ordered 4-tuple
    ("c52e7627", "C1_direct", 4, True),  # (x, y) = (7.5, 12.5) vs x_1=15/2, y_1=25/2
    ("30de45ff", "C3_gold", 0, True),  # 2^{n^2/2} = 4^{n^2/4}
    ("6553b443", "C1_direct", 0, False),  # only 4 of "4 or 9/4"
    ("6553b443", "C3_gold", 5, True),  # \boxed{4} and \boxed{9/4}
    ("b5165fa2", "C3_gold", 6, True),  # letter C
]


@pytest.fixture(scope="module")
def graded(release_data: Path):
    rows = [json.loads(line) for line in (release_data / "responses_sample.jsonl").open()]
    items = [{"response": r["response_tail"], "gold": r["gold"]} for r in rows]
    return rows, verify_many(items, extended=False), verify_many(items, extended=True)


def test_checked_cases(graded):
    rows, strict, ext = graded
    index = {(r["pid"][:8], r["condition"], r["rollout"]): i for i, r in enumerate(rows)}
    for pid, cond, roll, want in CHECKED:
        i = index[(pid, cond, roll)]
        assert (strict[i].label is Label.ACCEPT) is want, (pid, cond, roll, strict[i])


def test_extended_superset_of_strict(graded):
    _, strict, ext = graded
    assert all(e.accepted for s, e in zip(strict, ext) if s.accepted)
    assert not any(s.reason == "timeout" for s in strict + ext)


def test_exact_match_agrees_with_the_pool_on_real_responses(graded):
    rows, strict, ext = graded
    decided = [(exact_match(r["response_tail"], r["gold"]), s, e) for r, s, e in zip(rows, strict, ext)]
    decided = [(q, s, e) for q, s, e in decided if q is not None]
    assert len(decided) >= 20  # the shortcut is taken on real data, not only on made-up cases
    for quick, s, e in decided:
        assert (quick.label, quick.reason, quick.extracted) == (s.label, s.reason, s.extracted) == \
            (e.label, e.reason, e.extracted)
