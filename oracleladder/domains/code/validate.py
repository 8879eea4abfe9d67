"""Compile-time checks on a code packet (paper Appendix O, Table 30).

A packet is accepted when it parses, each helper's gold matches its declared signature and has
>= 2 asserts, every gold helper passes its own asserts, the gold program passes the parent
tests, and no helper alone already passes the parent tests (a leak). Every execution happens in
`oracleladder.sandbox`. Failure reasons are written to go back to the teacher verbatim.
"""

from __future__ import annotations

import ast
import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from oracleladder.sandbox import SandboxResult
from oracleladder.schemas.models import CheckResult, CodeProblem, FamilyReport

from .isolated import run_isolated
from .packet import CodePacket, Helper
from .problems import MAX_CASES, ast_parse, ast_unparse, run_tests

MIN_ASSERTS = 2


def _parse(src: str, what: str) -> tuple[ast.Module | None, str]:
    try:
        return ast_parse(src), ""
    except SyntaxError as e:
        return None, f"{what} does not parse: {e.msg} (line {e.lineno}: {(e.text or '').strip()!r})"


def check_parses(packet: CodePacket) -> list[CheckResult]:
    errors = []
    _, err = _parse(packet.program, "program")
    if err:
        errors.append(err)
    for i, h in enumerate(packet.helpers):
        _, err = _parse(h.gold, f"helper {i + 1} ({h.name}) gold")
        if err:
            errors.append(err)
        for j, a in enumerate(h.asserts):
            tree, err = _parse(a, f"helper {i + 1} ({h.name}) assert {j + 1}")
            if err:
                errors.append(err)
            elif tree is not None and not any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
                errors.append(f"helper {i + 1} ({h.name}) assert {j + 1} is not an assert statement: {a!r}")
    return [CheckResult(check="code_parses", passed=not errors, reason="; ".join(errors))]


def _signature_def(sig: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    s = sig.strip()
    if not (s.startswith("def ") or s.startswith("async def ")):
        s = "def " + s
    if not s.endswith(":"):
        s += ":"
    try:
        tree = ast_parse(s + "\n    pass\n")
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    ret = f" -> {ast_unparse(node.returns)}" if node.returns else ""
    return f"def {node.name}({ast_unparse(node.args)}){ret}:"


def check_signature(h: Helper, index: int) -> CheckResult:
    name = "helper_signature"
    decl = _signature_def(h.signature)
    if decl is None:
        return CheckResult(check=name, passed=False, milestone=index,
                           reason=f"signature {h.signature!r} is not a valid def line")
    try:
        gold = ast_parse(h.gold)
    except SyntaxError as e:
        return CheckResult(check=name, passed=False, milestone=index, reason=f"gold does not parse: {e.msg}")
    defs = [n for n in gold.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == h.name]
    if not defs:
        return CheckResult(check=name, passed=False, milestone=index,
                           reason=f"gold defines no top-level function named {h.name!r}")
    g = defs[-1]
    problems = []
    if decl.name != h.name:
        problems.append(f"signature names {decl.name!r} but the helper is {h.name!r}")
    def dump(n):
        return ast.dump(n) if n is not None else ""
    if dump(decl.args) != dump(g.args) or dump(decl.returns) != dump(g.returns) or type(decl) is not type(g):
        problems.append(f"declared {_def_line(decl)!r} but gold has {_def_line(g)!r}")
    return CheckResult(check=name, passed=not problems, milestone=index, reason="; ".join(problems))


def check_assert_count(h: Helper, index: int) -> CheckResult:
    n = len([a for a in h.asserts if a.strip()])
    return CheckResult(check="helper_asserts", passed=n >= MIN_ASSERTS, milestone=index,
                       reason="" if n >= MIN_ASSERTS else f"{h.name} has {n} assert(s); at least {MIN_ASSERTS} required")


_ASSERT_HARNESS = r'''

# ---------------- OracleLadder helper-assert harness ----------------
def __ol_run_asserts(marker, asserts):
    import ast, json, sys, traceback
    g = globals()
    for i, src in enumerate(asserts):
        detail = ""
        try:
            exec(compile(src, "<assert %d>" % (i + 1), "exec"), g)
            ok = True
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            ok = False
            detail = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-2000:]
            try:
                t = ast.parse(src).body[0]
                if isinstance(e, AssertionError) and isinstance(t, ast.Assert) and isinstance(t.test, ast.Compare) \
                        and len(t.test.ops) == 1 and isinstance(t.test.ops[0], ast.Eq):
                    actual = eval(compile(ast.Expression(t.test.left), "<actual>", "eval"), g)
                    expected = eval(compile(ast.Expression(t.test.comparators[0]), "<expected>", "eval"), g)
                    detail = "actual: %r, expected: %r\n%s" % (actual, expected, detail)
            except BaseException:
                pass
        sys.stdout.flush()
        sys.__stdout__.write("\n%s %s\n" % (marker, json.dumps({"i": i, "ok": ok, "detail": detail[-2500:]})))
        sys.__stdout__.flush()
'''


def _program_status(served: SandboxResult) -> str:
    """How the code under test ended, when it did not end cleanly (a syntax error shows here)."""
    if not (served.killed_reason or served.returncode != 0):
        return ""
    why = served.killed_reason or f"exit code {served.returncode}"
    return f"\nthe code under test ended ({why}); stderr: {served.stderr[-1500:]}"


def check_gold_passes_asserts(packet: CodePacket, index: int, *, timeout_s: float = 10) -> CheckResult:
    """Run helper `index`'s gold (after the other helpers' golds, which it may call) on its asserts.

    The gold runs in its own sandbox (`run_isolated`); the asserts, with the other golds, run in
    another, where `h.name` is a proxy returning plain decoded values."""
    h = packet.helpers[index]
    marker = "@@OLASSERT-" + uuid.uuid4().hex
    others = "\n\n".join(x.gold for j, x in enumerate(packet.helpers) if j != index)
    tests = others + f"\n{h.name} = __ol_remote({h.name!r})\n" + _ASSERT_HARNESS + \
        f"\n__ol_run_asserts({marker!r}, {json.dumps(h.asserts)})\n"
    r, served = run_isolated(others + "\n\n" + h.gold, tests, timeout_s=timeout_s, memory_mb=512)
    got: dict[int, dict] = {}
    for line in r.stdout.splitlines():
        if line.startswith(marker + " "):
            d = json.loads(line[len(marker) + 1:])
            got.setdefault(d["i"], d)
    name = "helper_gold_passes_asserts"
    for i, a in enumerate(h.asserts):
        d = got.get(i)
        if d is None:
            why = r.killed_reason or (f"exit code {r.returncode}" if r.returncode else "no result")
            return CheckResult(check=name, passed=False, milestone=index,
                               reason=f"{h.name}: assert {i + 1} `{a}` did not complete ({why}); "
                                      f"stderr: {r.stderr[-1500:]}{_program_status(served)}")
        if not d["ok"]:
            return CheckResult(check=name, passed=False, milestone=index,
                               reason=f"{h.name}: gold fails assert {i + 1} `{a}`\n{d['detail']}"
                                      f"{_program_status(served)}")
    if not h.asserts:
        return CheckResult(check=name, passed=False, milestone=index, reason=f"{h.name}: no asserts to run")
    return CheckResult(check=name, passed=True, milestone=index)


def check_program(packet: CodePacket, problem: CodeProblem, *, max_cases: int = MAX_CASES) -> CheckResult:
    o = run_tests(problem, packet.program, max_cases=max_cases)
    reason = "" if o.passed else f"gold program passes {o.n_passed}/{o.n_total} parent tests; first failure: {o.first_failure}"
    return CheckResult(check="program_passes_tests", passed=o.passed, reason=reason)


def check_no_leak(packet: CodePacket, problem: CodeProblem, index: int, *, max_cases: int = MAX_CASES) -> CheckResult:
    h = packet.helpers[index]
    o = run_tests(problem, h.gold, max_cases=max_cases)
    return CheckResult(check="helper_no_leak", passed=not o.passed, milestone=index,
                       reason=f"{h.name} alone passes all {o.n_total} parent tests (it leaks the solution)"
                       if o.passed else "")


def validate_packet(packet: CodePacket, problem: CodeProblem, *, max_cases: int = MAX_CASES) -> list[CheckResult]:
    checks = check_parses(packet)
    for i, h in enumerate(packet.helpers):
        checks.append(check_signature(h, i))
        checks.append(check_assert_count(h, i))
    if not packet.helpers:
        checks.append(CheckResult(check="helpers_present", passed=False, reason="the packet has no helpers"))
    if not checks[0].passed:
        return checks  # nothing to run
    jobs: list[Callable[[], CheckResult]] = [partial(check_gold_passes_asserts, packet, i)
                                             for i in range(len(packet.helpers))]
    jobs.append(partial(check_program, packet, problem, max_cases=max_cases))
    jobs += [partial(check_no_leak, packet, problem, i, max_cases=max_cases) for i in range(len(packet.helpers))]
    with ThreadPoolExecutor(max_workers=4) as ex:
        checks += list(ex.map(lambda f: f(), jobs))
    return checks


def check_packet(packet: CodePacket, problem: CodeProblem, *, max_cases: int = MAX_CASES) -> FamilyReport:
    return FamilyReport(pid=problem.pid, checks=validate_packet(packet, problem, max_cases=max_cases))
