"""Code problems: HumanEval loading and sandboxed grading; stdin/stdout problems from JSONL."""

from __future__ import annotations

import ast
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from oracleladder.domains.code.problems import (
    humaneval_path,
    load_humaneval,
    load_stdio_jsonl,
    run_tests,
    stdio_problem_from_record,
)

pytestmark = pytest.mark.timeout(120)

# First 20 HumanEval problems whose canonical solution has an int literal inside the entry-point
# function; bumping that literal by one is checked (below) to break each of them.
MUTATED_20 = [
    "HumanEval/1", "HumanEval/3", "HumanEval/5", "HumanEval/6", "HumanEval/8", "HumanEval/10",
    "HumanEval/14", "HumanEval/15", "HumanEval/17", "HumanEval/18", "HumanEval/19", "HumanEval/24",
    "HumanEval/25", "HumanEval/26", "HumanEval/30", "HumanEval/33", "HumanEval/36", "HumanEval/37",
    "HumanEval/39", "HumanEval/41",
]


class _BumpFirstInt(ast.NodeTransformer):
    def __init__(self):
        self.done = False

    def visit_Constant(self, node):
        if not self.done and type(node.value) is int:
            self.done = True
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def off_by_one(reference: str, entry_point: str) -> str:
    """Add 1 to the first integer literal in the body of the entry-point function."""
    tree = ast.parse(reference)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    bump = _BumpFirstInt()
    for stmt in fn.body:
        bump.visit(stmt)
    assert bump.done, f"{entry_point}: no int literal to mutate"
    out = ast.unparse(tree)
    assert out != ast.unparse(ast.parse(reference))
    return out


@pytest.fixture(scope="module")
def humaneval():
    return {p.pid: p for p in load_humaneval()}


def test_humaneval_loads_offline(humaneval):
    assert humaneval_path().name == "HumanEval.jsonl.gz"
    assert len(humaneval) == 164
    p = humaneval["HumanEval/0"]
    assert p.entry_point == "has_close_elements"
    assert "def check(candidate)" in p.test_code
    assert p.reference.startswith(p.statement) and "return" in p.reference
    assert not p.tests


def test_canonical_passes_and_off_by_one_fails_on_20(humaneval):
    probs = [humaneval[pid] for pid in MUTATED_20]

    def grade(p):
        return run_tests(p, p.reference), run_tests(p, off_by_one(p.reference, p.entry_point))

    with ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(grade, probs))
    for p, (good, bad) in zip(probs, results):
        assert good.passed, (p.pid, good.first_failure)
        assert good.n_passed == good.n_total > 0
        assert not bad.passed, (p.pid, "mutation survived")
        assert bad.first_failure, p.pid
        assert bad.n_passed < bad.n_total


def test_humaneval_failure_reports_expected_vs_actual(humaneval):
    p = humaneval["HumanEval/0"]
    o = run_tests(p, p.reference.replace("distance < threshold", "distance > threshold"))
    assert not o.passed and o.n_total == 7 and o.n_passed < 7
    assert o.first_failure.startswith("test ")
    assert "actual:" in o.first_failure and "expected:" in o.first_failure


def test_humaneval_crash_and_hang(humaneval):
    p = humaneval["HumanEval/0"]
    o = run_tests(p, "def has_close_elements(numbers, threshold):\n    raise ValueError('boom')\n")
    assert not o.passed and o.n_passed == 0 and "boom" in o.first_failure
    o = run_tests(p, "def has_close_elements(numbers, threshold):\n    while True: pass\n", timeout_s=1)
    assert not o.passed and o.n_passed == 0 and "timeout" in o.first_failure
    o = run_tests(p, "def has_close_elements(:\n")
    assert not o.passed and "SyntaxError" in o.first_failure


SUM_PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


def _write(tmp_path, recs):
    path = tmp_path / "stdio.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_stdio_load_and_grade(tmp_path):
    recs = [
        {"pid": "sum", "statement": "Print a+b.", "tests": [{"input": f"{i} {i * 3}\n", "output": f"{i * 4}\n"} for i in range(15)]},
        # LiveCodeBench field names, test cases as a JSON string
        {"question_id": "abc000_a", "question_content": "Print a+b.",
         "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
         "private_test_cases": [{"input": "5 5", "output": "10  \n\n", "testtype": "stdin"}]},
    ]
    ps = load_stdio_jsonl(_write(tmp_path, recs))
    assert [p.pid for p in ps] == ["sum", "abc000_a"]
    assert len(ps[0].tests) == 15 and len(ps[1].tests) == 2
    o = run_tests(ps[0], SUM_PROGRAM)
    assert o.passed and o.n_total == 12 and o.n_passed == 12  # capped at 12 cases
    o = run_tests(ps[1], SUM_PROGRAM)
    assert o.passed and o.n_total == 2  # stripped output compared
    o = run_tests(ps[0], "a, b = map(int, input().split())\nprint(a + b + (a == 7))\n")
    assert not o.passed and o.n_passed == 11
    assert "expected '28', got '29'" in o.first_failure
    o = run_tests(ps[0], "import sys\nsys.exit(2)")
    assert not o.passed and "exit code 2" in o.first_failure


def test_stdio_record_errors():
    with pytest.raises(ValueError):
        stdio_problem_from_record({"pid": "x", "statement": "s", "tests": []})
    with pytest.raises(ValueError):
        stdio_problem_from_record({"tests": [{"input": "", "output": ""}]})


# A wrong has_close_elements (always False) dressed up three ways to pass its own tests.
FORGE_MARKER = """
import os, re
def has_close_elements(numbers, threshold):
    return False
# the grader's result lines: find their marker in any source reachable here and claim passes
for path in ["prog.py"] + [f"/proc/{p}/cmdline" for p in os.listdir("/proc") if p.isdigit()]:
    try:
        text = open(path, errors="replace").read()
    except OSError:
        continue
    for m in set(re.findall(r"@@OLCASE-[0-9a-f]{32}", text)):
        for i in range(50):
            print("\\n%s {\\"i\\": %d, \\"ok\\": true, \\"detail\\": \\"\\"}" % (m, i), flush=True)
"""

FORGE_EQ = """
class Yes(int):  # an int whose == always holds, and a plain object that says the same
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
class Any:
    def __eq__(self, other):
        return True
    def __bool__(self):
        return True
def has_close_elements(numbers, threshold):
    return Any() if len(numbers) % 2 else Yes(0)
"""

FORGE_EXIT = """
import os, sys
def has_close_elements(numbers, threshold):
    sys.stdout.flush()
    os._exit(0)  # leave before any assert can fail
"""


@pytest.mark.parametrize("program", [FORGE_MARKER, FORGE_EQ, FORGE_EXIT], ids=["marker", "always_eq", "exit"])
def test_program_cannot_forge_its_tests(humaneval, program):
    p = humaneval["HumanEval/0"]
    o = run_tests(p, program)
    assert not o.passed and o.n_passed < o.n_total == 7, o
    # the same tests still pass a genuine solution, and the values it returns are compared as plain data
    assert run_tests(p, p.reference).passed


def test_plain_return_values_keep_their_types(humaneval):
    p = humaneval["HumanEval/0"]
    # 1 == True in Python, and a tuple is not a list: the tests see exactly what the program returned
    o = run_tests(p, "def has_close_elements(numbers, threshold):\n    s = sorted(numbers)\n"
                     "    return int(any(b - a < threshold for a, b in zip(s, s[1:])))\n")
    assert o.passed and o.n_passed == 7
    q = humaneval["HumanEval/8"]  # sum_product returns a tuple
    listy = q.reference.replace("return sum_value, prod_value", "return [sum_value, prod_value]")
    assert listy != q.reference
    assert run_tests(q, q.reference).passed and not run_tests(q, listy).passed


def test_subclasses_cross_as_plain_values_and_objects_are_refused(humaneval):
    p = humaneval["HumanEval/111"]  # histogram: a dict
    counter = ("from collections import Counter\ndef histogram(test):\n    c = Counter(test.split())\n"
               "    m = max(c.values(), default=0)\n    return Counter({k: v for k, v in c.items() if v == m})\n")
    assert run_tests(p, p.reference).passed and run_tests(p, counter).passed
    o = run_tests(p, "def histogram(test):\n    return (x for x in ())\n")
    assert not o.passed and "not plain data" in o.first_failure
