"""Code packets and their validators, run for real in the sandbox."""

from __future__ import annotations

import pytest

from oracleladder.domains.code import grade_helper
from oracleladder.domains.code.packet import CodePacket, Helper
from oracleladder.domains.code.problems import load_humaneval
from oracleladder.domains.code.validate import check_gold_passes_asserts, check_packet, check_signature
from oracleladder.schemas.models import CodeProblem, CodeTest, FamilyReport

pytestmark = pytest.mark.timeout(120)


def _by_check(report: FamilyReport, name: str):
    return [c for c in report.checks if c.check == name]


@pytest.fixture(scope="module")
def he0() -> CodeProblem:
    return load_humaneval(limit=1)[0]  # has_close_elements


def he0_packet() -> CodePacket:
    return CodePacket(
        plan="Sort the numbers; close elements are then adjacent. Check each adjacent gap.",
        helpers=[
            Helper(
                name="adjacent_gaps",
                signature="def adjacent_gaps(xs: list[float]) -> list[float]:",
                docstring="Gaps between consecutive elements of sorted(xs).",
                asserts=["assert adjacent_gaps([3.0, 1.0, 2.0]) == [1.0, 1.0]", "assert adjacent_gaps([5.0]) == []"],
                gold="def adjacent_gaps(xs: list[float]) -> list[float]:\n    s = sorted(xs)\n"
                     "    return [b - a for a, b in zip(s, s[1:])]\n",
            ),
            Helper(
                name="any_below",
                signature="def any_below(values: list[float], t: float) -> bool:",
                docstring="True if some value is strictly below t.",
                asserts=["assert any_below([0.5, 2.0], 1.0)", "assert not any_below([], 1.0)",
                         "assert any_below(adjacent_gaps([1.0, 1.2]), 0.3) is True"],
                gold="def any_below(values: list[float], t: float) -> bool:\n    return any(v < t for v in values)\n",
            ),
        ],
        program=(
            "from typing import List\n\n"
            "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
            "    s = sorted(numbers)\n"
            "    return any(b - a < threshold for a, b in zip(s, s[1:]))\n"
        ),
    )


def test_good_packet_passes(he0):
    report = check_packet(he0_packet(), he0)
    assert isinstance(report, FamilyReport) and report.pid == "HumanEval/0"
    assert report.passed, [c.model_dump() for c in report.failures()]
    names = {c.check for c in report.checks}
    assert names >= {"code_parses", "helper_signature", "helper_asserts", "helper_gold_passes_asserts",
                     "program_passes_tests", "helper_no_leak"}
    assert len(_by_check(report, "helper_gold_passes_asserts")) == 2


def test_failing_assert_reported_with_traceback(he0):
    pk = he0_packet()
    pk.helpers[0].asserts[0] = "assert adjacent_gaps([3.0, 1.0, 2.0]) == [2.0, 1.0]"
    pk.helpers[1].gold = "def any_below(values: list[float], t: float) -> bool:\n    return values[0] < t\n"
    report = check_packet(pk, he0)
    c0, c1 = _by_check(report, "helper_gold_passes_asserts")
    assert not c0.passed and c0.milestone == 0
    assert "assert adjacent_gaps([3.0, 1.0, 2.0]) == [2.0, 1.0]" in c0.reason
    assert "actual: [1.0, 1.0], expected: [2.0, 1.0]" in c0.reason and "AssertionError" in c0.reason
    assert not c1.passed and "IndexError" in c1.reason and "Traceback" in c1.reason
    assert "assert not any_below([], 1.0)" in c1.reason


def test_signature_mismatch_and_too_few_asserts(he0):
    pk = he0_packet()
    pk.helpers[0].signature = "def adjacent_gaps(xs: list[float], k: int) -> list[float]:"
    pk.helpers[1].asserts = ["assert any_below([0.5], 1.0)"]
    report = check_packet(pk, he0)
    sig = _by_check(report, "helper_signature")
    assert not sig[0].passed and "k: int" in sig[0].reason and sig[1].passed
    cnt = _by_check(report, "helper_asserts")
    assert cnt[0].passed and not cnt[1].passed and "1 assert" in cnt[1].reason
    # signature text variants that mean the same def line are accepted
    h = he0_packet().helpers[1]
    h.signature = "any_below(values: list[float], t: float) -> bool"
    assert check_signature(h, 1).passed


def test_gold_program_failing_reports_expected_vs_actual(he0):
    pk = he0_packet()
    pk.program = pk.program.replace("< threshold", "<= threshold + 1")
    report = check_packet(pk, he0)
    (c,) = _by_check(report, "program_passes_tests")
    assert not c.passed
    assert "expected: False" in c.reason and "actual:   True" in c.reason


def test_leaking_helper_detected(he0):
    pk = he0_packet()
    pk.helpers.append(Helper(
        name="has_close_elements", signature="def has_close_elements(numbers, threshold):",
        docstring="The whole answer.", asserts=["assert has_close_elements([1.0, 1.1], 0.5)",
                                                "assert not has_close_elements([1.0, 3.0], 0.5)"],
        gold="def has_close_elements(numbers, threshold):\n    s = sorted(numbers)\n"
             "    return any(b - a < threshold for a, b in zip(s, s[1:]))\n",
    ))
    report = check_packet(pk, he0)
    leaks = _by_check(report, "helper_no_leak")
    assert [c.passed for c in leaks] == [True, True, False]
    assert "leaks" in leaks[2].reason and not report.passed


def test_syntax_error_stops_early(he0):
    pk = he0_packet()
    pk.helpers[0].gold = "def adjacent_gaps(xs:\n"
    report = check_packet(pk, he0)
    (c,) = _by_check(report, "code_parses")
    assert not c.passed and "adjacent_gaps" in c.reason
    assert not _by_check(report, "helper_gold_passes_asserts")


def test_stdio_packet():
    prob = CodeProblem(pid="pairsum", statement="Read n and n ints; print the number of pairs i<j with a_i+a_j even.",
                       tests=[CodeTest(input="4\n1 2 3 4\n", output="2\n"), CodeTest(input="3\n2 4 6\n", output="3\n"),
                              CodeTest(input="1\n7\n", output="0\n")])
    pk = CodePacket(
        plan="Count evens e and odds o; answer is C(e,2)+C(o,2).",
        helpers=[
            Helper(name="choose2", signature="def choose2(k: int) -> int:", docstring="k choose 2.",
                   asserts=["assert choose2(3) == 3", "assert choose2(1) == 0"],
                   gold="def choose2(k: int) -> int:\n    return k * (k - 1) // 2\n"),
            Helper(name="parity_counts", signature="def parity_counts(a: list[int]) -> tuple[int, int]:",
                   docstring="(number of evens, number of odds).",
                   asserts=["assert parity_counts([1, 2, 3]) == (1, 2)", "assert parity_counts([]) == (0, 0)"],
                   gold="def parity_counts(a: list[int]) -> tuple[int, int]:\n"
                        "    e = sum(1 for x in a if x % 2 == 0)\n    return e, len(a) - e\n"),
        ],
        program=("def choose2(k):\n    return k * (k - 1) // 2\n"
                 "n = int(input())\na = list(map(int, input().split()))\n"
                 "e = sum(1 for x in a if x % 2 == 0)\nprint(choose2(e) + choose2(n - e))\n"),
    )
    report = check_packet(pk, prob)
    assert report.passed, [c.model_dump() for c in report.failures()]
    pk.program = pk.program.replace("choose2(n - e)", "choose2(n - e) + 1")
    (c,) = _by_check(check_packet(pk, prob), "program_passes_tests")
    assert not c.passed and "expected '2', got '3'" in c.reason


# Wrong adjacent_gaps helpers that try to pass the helper's asserts anyway.
FORGED_HELPERS = {
    "compile": (
        "import builtins\n"
        "_real_compile = builtins.compile\n"
        "def _no_asserts(src, *a, **k):  # every assert the harness compiles becomes a no-op\n"
        "    return _real_compile('pass' if str(src).lstrip().startswith('assert') else src, *a, **k)\n"
        "builtins.compile = _no_asserts\n"
        "def adjacent_gaps(xs: list[float]) -> list[float]:\n    return []\n"
    ),
    "always_eq": (
        "class Any(list):\n    def __eq__(self, other):\n        return True\n"
        "def adjacent_gaps(xs: list[float]) -> list[float]:\n    return Any()\n"
    ),
    "marker": (
        "import re, sys\n"
        "def adjacent_gaps(xs: list[float]) -> list[float]:\n"
        "    for m in set(re.findall(r'@@OLASSERT-[0-9a-f]{32}', open('prog.py').read())):\n"
        "        for i in range(10):\n"
        "            print('\\n%s {\"i\": %d, \"ok\": true, \"detail\": \"\"}' % (m, i), flush=True)\n"
        "    return []\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(FORGED_HELPERS))
def test_helper_cannot_forge_its_asserts(kind):
    pk = he0_packet()
    v = grade_helper(pk, 0, FORGED_HELPERS[kind])
    assert not v.accepted, v.reason
    assert grade_helper(pk, 0, pk.helpers[0].gold).accepted
    # helper 1's asserts call adjacent_gaps too: the gold of helper 1 still passes with the real one
    assert check_gold_passes_asserts(pk, 1).passed


def test_helper_values_cross_as_plain_data():
    pk = he0_packet()
    tupled = pk.helpers[0].gold.replace("return [b - a", "return tuple([b - a")[:-1] + ")\n"
    v = grade_helper(pk, 0, tupled)
    assert not v.accepted and "actual: (1.0, 1.0), expected: [1.0, 1.0]" in v.reason
    # an exception raised by the helper reaches the assert as the same builtin type
    pk.helpers[0].asserts.append(
        "try:\n    adjacent_gaps(None)\n    assert False\nexcept TypeError:\n    pass")
    assert grade_helper(pk, 0, pk.helpers[0].gold).accepted
