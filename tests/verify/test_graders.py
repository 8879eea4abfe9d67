"""Three graders: `paper` (the release's default cascade), `strict` (default), `extended`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.ladder import ProbeConfig
from oracleladder.verify import grade, verify, verify_many
from oracleladder.verify.graders import exact_match
from oracleladder.workers import WorkerPool

runner = CliRunner()

TWO_BOXES = r"so \boxed{4} and \boxed{\frac{9}{4}}"
FOUR = r"w=-8, x=-\frac{12}{5}, y=\frac{12}{5}, z=8"
FOUR_BOXES = r"\boxed{w = -8}, \boxed{x = -\frac{12}{5}}, \boxed{y = \frac{12}{5}}, \boxed{z = 8}"


@pytest.mark.parametrize("response,gold,paper,strict", [
    (r"\boxed{\frac{1}{2}}", "0.5", True, True),
    (FOUR_BOXES, FOUR, False, True),  # no compound answer across boxes in the paper's cascade
    (r"\boxed{174} and \boxed{13}", "174,13", False, True),
    (r"\boxed{3.15 \text{ m}}", r"(C) 3.15 \mathrm{~m}", False, True),  # no MCQ option values
    (r"\boxed{√2}", r"\sqrt{2}", False, True),  # no Unicode math
    (r"\boxed{nĠ\neqĠ2^k}", r"n\neq2^{k}(k\in{N})", False, True),  # no BPE decoding, no domain rule
    # MATH's is_equiv drops everything from "\text{ " on: the release accepted a lone 4 here
    (r"\boxed{4}", r"4 \text{ or } 2 \frac{1}{4}", True, False),
    (r"\boxed{5}", r"4 \text{ or } 2 \frac{1}{4}", False, False),
    (r"\boxed{x = 3}", "3", True, True),  # a short label goes in both
])
def test_paper_and_strict(response: str, gold: str, paper: bool, strict: bool) -> None:
    assert verify(response, gold, grader="paper", in_process=True).accepted is paper
    assert verify(response, gold, in_process=True).accepted is strict
    assert verify(response, gold, grader="strict").accepted is strict  # the same through the pool


def test_extended_flag_is_a_synonym_and_unknown_graders_are_refused() -> None:
    gold = r"x<1 \text{ or } x>2"
    response = r"\boxed{(-\infty,1)\cup(2,\infty)}"
    assert verify(response, gold, extended=True).accepted
    assert verify(response, gold, grader="extended").accepted
    assert not verify(response, gold, grader="strict").accepted
    assert verify_many([(response, gold)], extended=True)[0].accepted
    assert [v.accepted for v in verify_many([(response, gold), {"response": response, "gold": gold, "grader": "strict"}],
                                            grader="extended")] == [True, False]
    with pytest.raises(ValueError, match="unknown grader"):
        verify(response, gold, grader="lenient")
    assert ProbeConfig(student="s", grader="paper").grader == "paper"
    with pytest.raises(ValueError, match="unknown grader"):
        ProbeConfig(student="s", grader="lenient")


def test_cli_grader_option() -> None:
    args = ["verify", "--gold", FOUR, "--response", FOUR_BOXES, "--json"]
    assert json.loads(runner.invoke(app, [*args, "--grader", "paper"]).stdout)["label"] == "NOT_ACCEPT"
    assert json.loads(runner.invoke(app, args).stdout)["label"] == "ACCEPT"
    bad = runner.invoke(app, [*args, "--grader", "lenient"])
    assert bad.exit_code == 2 and "unknown grader 'lenient'" in bad.output


# no_boxed on a closed box that holds the gold: the release's bucketer, read in docs/verifier-agreement.md
BUCKETER_ERRORS = {("d5e3b091", "C3_gold", r) for r in (0, 1, 2, 3, 4, 6, 7)} | \
    {("30de45ff", "C3_gold", r) for r in (0, 2, 4, 5, 7)} | {("ba7e87af", "C3_gold", 2)}


def test_paper_reproduces_the_release_buckets(release_data: Path) -> None:
    rows = [json.loads(line) for line in (release_data / "responses_sample.jsonl").open()]
    items = [{"response": r["response_tail"], "gold": r["gold"]} for r in rows]
    paper, strict = verify_many(items, grader="paper"), verify_many(items, grader="strict")
    differ = {(r["pid"][:8], r["condition"], r["rollout"]) for r, v in zip(rows, paper)
              if v.accepted != (r["bucket"] == "parsed_correct")}
    assert differ == BUCKETER_ERRORS  # 387/400 = 96.75%; 100% of the responses the bucketer read right
    assert all(r["bucket"] == "no_boxed" and v.accepted for r, v in zip(rows, paper)
               if (r["pid"][:8], r["condition"], r["rollout"]) in differ)
    # strict's compound accepts over several boxes: paper reads only the last box
    multi = [(r, v) for r, v, s in zip(rows, paper, strict) if "boxes" in s.reason]
    assert multi
    for r, v in multi:
        last = verify(rf"\boxed{{{v.extracted}}}", r["gold"], grader="paper", in_process=True)
        assert v.accepted is last.accepted and "boxes" not in v.reason


def test_no_grader_accepts_an_incorrect_judged_answer(release_data: Path) -> None:
    rows = [json.loads(line) for line in (release_data / "judged_sample.jsonl").open()]
    for grader in ("paper", "strict", "extended"):
        verdicts = verify_many([(r["response_tail"], r["canonical"]) for r in rows], grader=grader)
        assert [r["item"] for r, v in zip(rows, verdicts) if r["label"] == "incorrect" and v.accepted] == []
        if grader == "paper":  # the multi-box answers strict accepts (items 15, 39) stay rejected
            assert not any(v.accepted for r, v in zip(rows, verdicts) if r["item"] in (15, 39))


async def test_the_pools_shortcut_never_overrides_the_paper_grader() -> None:
    """`exact_match` runs before the worker and does not know the grader: it may only decide what
    every grader accepts (C_5^2 is a binomial coefficient for strict, not for the paper's cascade)."""
    response, gold = r"\boxed{\binom{5}{2}}", r"C_{5}^{2}"
    assert verify(response, gold, in_process=True).accepted
    assert not verify(response, gold, grader="paper", in_process=True).accepted
    with WorkerPool(workers=1) as pool:  # the prober's path: the shortcut, then a worker
        assert not (await grade(pool, response, gold, grader="paper")).accepted
        assert (await grade(pool, response, gold, grader="strict")).accepted
    assert exact_match(response, gold) is None
    assert exact_match(r"\boxed{ \dfrac{9}{4} }", r"\frac{9}{4}") is not None
