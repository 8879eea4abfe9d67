"""The code ladder (helper test + C1/C2/C3), graded for real in the sandbox.

(a) a scripted student on the loopback server whose answers per prompt are known, so every
    family's verdicts, outcome and five-way label can be derived by hand;
(b) the embedded `local` student (SmolLM2-135M, offline) on 3 HumanEval families: structure only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oracleladder.clients import make_client
from oracleladder.domains.code import (
    CODE_CONDITIONS,
    CodeDomain,
    CodeFamily,
    condition_prompt,
    extract_code,
    helper_prompt,
)
from oracleladder.domains.code.packet import CodePacket, Helper
from oracleladder.domains.code.problems import load_humaneval
from oracleladder.domains.code.validate import check_packet
from oracleladder.ladder import ProbeConfig
from oracleladder.ladder.outcomes import Gap, Outcome, classify, milestone_test, parent_outcome
from oracleladder.probe.runner import run_probe
from oracleladder.schemas import CodeProblem, CodeTest
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

pytestmark = pytest.mark.timeout(300)


# --------------------------------------------------------------------------- hand-written packets

def _h(name: str, sig: str, doc: str, asserts: list[str], body: str) -> Helper:
    return Helper(name=name, signature=sig, docstring=doc, asserts=asserts, gold=f"{sig}\n{body}")


HE0 = CodePacket(
    plan="Sort the numbers so the closest pair is adjacent, take the gaps between neighbours, "
         "and report whether any gap is below the threshold.",
    helpers=[
        _h("adjacent_gaps", "def adjacent_gaps(xs: list[float]) -> list[float]:",
           "Return the differences between consecutive elements of sorted(xs); [] if len(xs) < 2.",
           ["assert adjacent_gaps([3.0, 1.0, 2.0]) == [1.0, 1.0]", "assert adjacent_gaps([5.0]) == []"],
           "    s = sorted(xs)\n    return [b - a for a, b in zip(s, s[1:])]\n"),
        _h("any_below", "def any_below(values: list[float], t: float) -> bool:",
           "Return True if some value in values is strictly less than t.",
           ["assert any_below([0.5, 2.0], 1.0) is True", "assert any_below([], 1.0) is False"],
           "    return any(v < t for v in values)\n"),
    ],
    program="from typing import List\n\n"
            "def adjacent_gaps(xs):\n    s = sorted(xs)\n    return [b - a for a, b in zip(s, s[1:])]\n\n"
            "def any_below(values, t):\n    return any(v < t for v in values)\n\n"
            "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
            "    return any_below(adjacent_gaps(numbers), threshold)\n",
)
HE3 = CodePacket(
    plan="Compute the running balance after each operation and check whether any balance is negative.",
    helpers=[
        _h("prefix_sums", "def prefix_sums(xs: list[int]) -> list[int]:",
           "Return the running totals of xs: element i is xs[0] + ... + xs[i]; [] for an empty list.",
           ["assert prefix_sums([1, 2, -4]) == [1, 3, -1]", "assert prefix_sums([]) == []"],
           "    out, s = [], 0\n    for x in xs:\n        s += x\n        out.append(s)\n    return out\n"),
        _h("any_negative", "def any_negative(xs: list[int]) -> bool:",
           "Return True if some element of xs is strictly below zero.",
           ["assert any_negative([1, -1]) is True", "assert any_negative([0, 2]) is False"],
           "    return any(x < 0 for x in xs)\n"),
    ],
    program="from typing import List\n\n"
            "def below_zero(operations: List[int]) -> bool:\n"
            "    s = 0\n    for op in operations:\n        s += op\n        if s < 0:\n            return True\n"
            "    return False\n",
)
HE4 = CodePacket(
    plan="Compute the mean of the numbers, then average the absolute deviations from it.",
    helpers=[
        _h("mean", "def mean(xs: list[float]) -> float:",
           "Return the arithmetic mean of the non-empty list xs.",
           ["assert mean([1.0, 2.0, 3.0]) == 2.0", "assert mean([4.0]) == 4.0"],
           "    return sum(xs) / len(xs)\n"),
        _h("abs_deviations", "def abs_deviations(xs: list[float], c: float) -> list[float]:",
           "Return [abs(x - c) for each x in xs], in order.",
           ["assert abs_deviations([1.0, 3.0], 2.0) == [1.0, 1.0]", "assert abs_deviations([], 0.0) == []"],
           "    return [abs(x - c) for x in xs]\n"),
    ],
    program="from typing import List\n\n"
            "def mean_absolute_deviation(numbers: List[float]) -> float:\n"
            "    m = sum(numbers) / len(numbers)\n    return sum(abs(x - m) for x in numbers) / len(numbers)\n",
)

SUM_PROBLEM = CodeProblem(
    pid="stdio/sum",
    statement="The first line holds n. The second line holds n integers. Print their sum.",
    tests=[CodeTest(input="3\n1 2 3\n", output="6\n"), CodeTest(input="1\n-5\n", output="-5\n")],
)
SUM_PACKET = CodePacket(
    plan="Parse the integers of the second line, then add them up.",
    helpers=[
        _h("parse_ints", "def parse_ints(line: str) -> list[int]:",
           "Return the whitespace-separated integers of line, in order.",
           ["assert parse_ints('1 -2  3') == [1, -2, 3]", "assert parse_ints('') == []"],
           "    return [int(t) for t in line.split()]\n"),
        _h("total", "def total(xs: list[int]) -> int:",
           "Return the sum of xs (0 for an empty list).",
           ["assert total([1, 2, 3]) == 6", "assert total([]) == 0"],
           "    s = 0\n    for x in xs:\n        s += x\n    return s\n"),
    ],
    program="import sys\n\ndef main():\n    data = sys.stdin.read().split('\\n')\n"
            "    print(sum(int(t) for t in data[1].split()))\n\nmain()\n",
)


@pytest.fixture(scope="module")
def he() -> dict[str, CodeProblem]:
    return {p.pid: p for p in load_humaneval(limit=5)}


@pytest.fixture(scope="module")
def families(he) -> list[CodeFamily]:
    fams = [CodeFamily(he["HumanEval/0"], HE0), CodeFamily(SUM_PROBLEM, SUM_PACKET),
            CodeFamily(he["HumanEval/3"], HE3), CodeFamily(he["HumanEval/4"], HE4)]
    for f in fams:  # the hand-written packets are themselves valid
        report = check_packet(f.packet, f.problem)
        assert report.passed, (f.pid, [c.model_dump() for c in report.failures()])
    return fams


# --------------------------------------------------------------------------- prompts and extraction

def test_extract_code():
    assert extract_code("x\n```python\na = 1\n```\ntext\n```python\nb = 2\n```\nbye") == "b = 2\n"
    assert extract_code("```py\nc = 3\n```\n```\nnot python\n```") == "c = 3\n"
    assert extract_code("look:\n```\nd = 4\n```") == "d = 4\n"
    assert extract_code("```python\ndef f():\n    return 1") == "def f():\n    return 1"  # cut off by max_tokens
    assert extract_code("def g(): pass") == "def g(): pass"


def test_prompts_show_what_each_rung_allows(families):
    f0 = families[0]
    c1, c2, c3 = (condition_prompt(f0, c)[0]["content"] for c in CODE_CONDITIONS)
    statement = f0.problem.statement.strip()
    assert all(statement in c for c in (c1, c2, c3))
    assert "has_close_elements" in c1 and "def adjacent_gaps" not in c1 and "Sort the numbers" not in c1
    assert "def adjacent_gaps(xs: list[float]) -> list[float]:" in c2 and f0.packet.helpers[0].docstring in c2
    assert "Sort the numbers" in c2 and "zip(s, s[1:])" not in c2  # no gold code in C2
    assert f0.packet.gold_helpers().strip() in c3 and "Sort the numbers" in c3
    assert f0.packet.program.strip() not in c3  # the full gold program is never shown
    stdin_c1 = condition_prompt(families[1], "C1_direct")[0]["content"]
    assert "standard input" in stdin_c1
    h = helper_prompt(f0.packet, 0)[0]["content"]
    assert "def adjacent_gaps(xs: list[float]) -> list[float]:" in h and f0.packet.helpers[0].docstring in h
    assert "assert" not in h and f0.problem.statement.strip() not in h
    assert "assert adjacent_gaps([5.0]) == []" in helper_prompt(f0.packet, 0, show_asserts=True)[0]["content"]
    jobs = CodeDomain().plan_jobs(families[:1], ProbeConfig(student="s", k=2), families[:1])
    assert [(j.target, j.k) for j in jobs] == [("m0", 0), ("m0", 1), ("m1", 0), ("m1", 1), ("C1_direct", 0),
                                               ("C1_direct", 1), ("C2_descriptions", 0), ("C2_descriptions", 1),
                                               ("C3_gold_answers", 0), ("C3_gold_answers", 1)]


# --------------------------------------------------------------------------- (a) scripted student

K = 2
WRONG_HE0 = "def has_close_elements(numbers, threshold):\n    return False\n"
WRONG_SUM = "print(0)\n"
WRONG_TOTAL = "def total(xs: list[int]) -> int:\n    return 0\n"


def _answer(code: str) -> str:
    return f"Here is my solution.\n\n```python\n# draft\n```\n\nFinal version:\n\n```python\n{code}```\n"


def _student(he0_statement: str, he3_statement: str):
    """Answers by prompt: (a) HumanEval/0: helpers right, C1/C2 wrong, C3 right -> Answers-Needed with
    Stage 0 passed; stdin sum: helper `total` wrong, C1 wrong, C2/C3 right -> Roadmap-Needed, Stage 0
    failed; HumanEval/3: everything right -> Direct."""

    def script(messages: list[dict], body: dict) -> str:
        user = messages[-1]["content"]
        if user.startswith("Implement the following Python function"):
            for fam_packet in (HE0, SUM_PACKET, HE3):
                for h in fam_packet.helpers:
                    if h.signature in user:
                        return _answer(WRONG_TOTAL if h.name == "total" else h.gold)
            raise AssertionError(user)
        c2, c3 = "Hint --- the following plan" in user, "have been implemented and verified" in user
        if he0_statement in user:
            return _answer(HE0.program if c3 else WRONG_HE0)
        if SUM_PROBLEM.statement in user:
            return _answer(SUM_PACKET.program if (c2 or c3) else WRONG_SUM)
        if he3_statement in user:
            return _answer(HE3.program)
        raise AssertionError(user)

    return script


async def test_scripted_student_outcomes_and_labels(tmp_path: Path, families) -> None:
    fams = families[:3]
    script = _student(fams[0].problem.statement.strip(), fams[2].problem.statement.strip())
    async with LoopbackServer(script=script) as server:
        store = await Store.open(tmp_path / "probe.sqlite")
        client = make_client("openai/student", base_url=server.openai_base_url, cache=store)
        config = ProbeConfig(student="openai/student", k=K, max_tokens=512, temperature=0.7)
        n = await run_probe(CodeDomain(), fams, config, client=client, store=store, run_id="r1", source="hand")
        rollouts = await store.rollouts(student="openai/student", run_id="r1")
        calls = server.total
        await client.aclose()
        await store.close()

    expected_n = sum((len(f.packet.helpers) + 3) * K for f in fams)
    assert n == expected_n == len(rollouts) == calls
    assert {r.source for r in rollouts} == {"hand"}
    by = {(r.pid, r.target, r.k): r for r in rollouts}

    # verdict reasons
    r = by[("HumanEval/0", "C3_gold_answers", 0)]
    assert r.verdict.label is Label.ACCEPT and r.verdict.reason == "7/7 tests passed"
    assert r.verdict.extracted == HE0.program  # the last python block, not the draft
    r = by[("HumanEval/0", "C1_direct", 0)]
    assert r.verdict.label is Label.NOT_ACCEPT and "first failure" in r.verdict.reason
    r = by[("HumanEval/0", "m0", 1)]
    assert r.verdict.label is Label.ACCEPT and r.verdict.reason == "2/2 tests passed"
    r = by[("stdio/sum", "m1", 0)]
    assert r.verdict.label is Label.NOT_ACCEPT
    assert "total: fails assert 1 `assert total([1, 2, 3]) == 6`" in r.verdict.reason
    assert "actual: 0, expected: 6" in r.verdict.reason
    r = by[("stdio/sum", "C1_direct", 0)]
    assert r.verdict.label is Label.NOT_ACCEPT and "expected '6', got '0'" in r.verdict.reason
    assert by[("stdio/sum", "C2_descriptions", 1)].verdict.reason == "2/2 tests passed"

    results = {fr.pid: fr for fr in CodeDomain().collect_results(fams, rollouts)}
    assert set(results) == {"HumanEval/0", "stdio/sum", "HumanEval/3"}
    he0, s, he3 = results["HumanEval/0"], results["stdio/sum"], results["HumanEval/3"]
    assert he0.stage0 == {"m0": [True, True], "m1": [True, True]}
    assert he0.ladder == {"C1_direct": [False, False], "C2_descriptions": [False, False],
                          "C3_gold_answers": [True, True]}
    assert s.stage0 == {"m0": [True, True], "m1": [False, False]}
    assert s.ladder == {"C1_direct": [False, False], "C2_descriptions": [True, True],
                        "C3_gold_answers": [True, True]}
    assert all(v == [True, True] for v in [*he3.stage0.values(), *he3.ladder.values()])

    assert (parent_outcome(he0.ladder), milestone_test(he0.stage0), classify(he0)) == \
        (Outcome.ANSWERS_NEEDED, True, Gap.MS_EXEC)
    assert (parent_outcome(s.ladder), milestone_test(s.stage0), classify(s)) == \
        (Outcome.ROADMAP_NEEDED, False, Gap.MISSING_MS)
    assert (parent_outcome(he3.ladder), classify(he3)) == (Outcome.DIRECT, Gap.DIRECT)
    # tau=3 with K=2: no condition can reach it, so HumanEval/0 (Stage 0 passed) becomes a composition gap
    assert (parent_outcome(he0.ladder, tau=3), classify(he0, tau=3)) == (Outcome.UNRECOVERED, Gap.COMPOSITION)
    assert classify(s, tau=3) == Gap.CAPABILITY


# --------------------------------------------------------------------------- (b) the local student

@pytest.mark.local
async def test_local_student_probe_structure(tmp_path: Path, families) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    fams = [families[0], families[2], families[3]]  # HumanEval/0, /3, /4
    store = await Store.open(tmp_path / "local.sqlite")
    client = make_client("local", cache=store)
    student = f"{client.provider.name}/{client.model}"
    config = ProbeConfig(student=student, k=1, max_tokens=128, temperature=0.7)
    try:
        n = await run_probe(CodeDomain(), fams, config, client=client, store=store, run_id="local1", source="hand")
        rollouts = await store.rollouts(student=student, run_id="local1")
        calls_after_first = client.usage.successes
        again = await run_probe(CodeDomain(), fams, config, client=client, store=store, run_id="local2", source="hand")
        replayed = client.usage.successes - calls_after_first
    finally:
        await client.aclose()
        await store.close()

    assert n == again == len(rollouts) == 3 * (2 + 3)
    assert replayed == 0  # the rerun is served from the call cache
    assert {(r.pid, r.target) for r in rollouts} == {
        (f.pid, t) for f in fams for t in ("m0", "m1", *CODE_CONDITIONS)}
    for r in rollouts:
        assert r.verdict.label in (Label.ACCEPT, Label.NOT_ACCEPT) and r.verdict.reason
        assert r.verdict.extracted is not None
        if r.verdict.label is Label.ACCEPT:
            assert "tests passed" in r.verdict.reason
    results = CodeDomain().collect_results(fams, rollouts)
    assert [fr.pid for fr in results] == [f.pid for f in fams]
    for fr in results:
        assert set(fr.stage0) == {"m0", "m1"} and all(len(v) == 1 for v in fr.stage0.values())
        assert set(fr.ladder) == set(CODE_CONDITIONS) and all(len(v) == 1 for v in fr.ladder.values())
        assert isinstance(parent_outcome(fr.ladder), Outcome)
        assert isinstance(classify(fr), Gap)
        print(f"  {fr.pid}: stage0={fr.stage0} ladder={fr.ladder} -> {parent_outcome(fr.ladder).value}, "
              f"{classify(fr).value}")
