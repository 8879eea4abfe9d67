"""The code ladder (paper Appendix O, Table 30): the helper test (Stage 0) and C1 / C2 / C3.

* helper test, target "m<i>": implement helper i alone from its signature and docstring (and,
  with `show_helper_asserts`, its asserts); graded by running the helper's asserts in the sandbox,
  after the other helpers' gold implementations (which it may call);
* C1_direct: the statement only;
* C2_descriptions: the statement plus the plan and helper signatures/docstrings (`packet.roadmap()`);
* C3_gold_answers: the statement, the plan and the verified gold helpers (`packet.gold_helpers()`).

A parent program passes when every executed test passes (`code.problems.run_tests`). The student's
code is the last ```python block of its response (else the last fenced block, else the whole text).
Rollouts are stored like the math prober's, and `collect_code_results` builds the same
`FamilyResults`, so outcomes and the five-way taxonomy come from `probe.outcomes`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..clients import Client
from ..code.packet import CodePacket
from ..code.problems import MAX_CASES, run_tests
from ..code.validate import check_gold_passes_asserts
from ..compiler.code import load_packets, scrub
from ..prompts import load
from ..schemas import CodeProblem, Condition, Rollout, Verdict
from ..schemas.types import Label
from ..store import FailedJob, Store
from .outcomes import FamilyResults, results_from_rollouts
from .runner import run_jobs

CODE_CONDITIONS: tuple[Condition, ...] = ("C1_direct", "C2_descriptions", "C3_gold_answers")

FUNCTION_INTERFACE = ("Write the complete Python function `{entry_point}` with the signature given above "
                      "(and any imports it needs). It will be tested by calling it; do not read input or print.")
STDIO_INTERFACE = ("Write a complete Python 3 program that reads the input from standard input and prints "
                   "the answer to standard output.")


@dataclass(frozen=True)
class CodeFamily:
    """A code parent problem and its validated packet."""

    problem: CodeProblem
    packet: CodePacket

    @property
    def pid(self) -> str:
        return self.problem.pid


@dataclass(frozen=True)
class CodeProbeConfig:
    student: str  # provider/model string, also the student's name in the store
    k: int = 8
    conditions: tuple[Condition, ...] = CODE_CONDITIONS
    stage0: bool = True  # the helper test
    max_tokens: int = 4096
    temperature: float = 0.7
    show_helper_asserts: bool = False  # the helper prompt lists the helper's asserts (paper Table 30)
    max_cases: int = MAX_CASES
    timeout_s: float = 10  # per sandbox run


# --------------------------------------------------------------------------- prompts

def _messages(user: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}]


def student_interface(problem: CodeProblem) -> str:
    if problem.test_code:
        return FUNCTION_INTERFACE.replace("{entry_point}", problem.entry_point or "")
    return STDIO_INTERFACE


def condition_prompt(family: CodeFamily, condition: Condition) -> list[dict[str, str]]:
    p, packet = family.problem, family.packet
    statement, iface = p.statement.strip(), student_interface(p)
    if condition == "C1_direct":
        user = load("code_c1").render(statement=statement, interface=iface)
    elif condition == "C2_descriptions":
        user = load("code_c2").render(statement=statement, roadmap=packet.roadmap().strip(), interface=iface)
    elif condition == "C3_gold_answers":
        user = load("code_c3").render(statement=statement, plan=packet.plan.strip(),
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
    return _messages(load("code_helper").render(signature=sig, docstring=h.docstring.strip(), tests=tests))


# --------------------------------------------------------------------------- extraction and grading

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


# --------------------------------------------------------------------------- the probe

@dataclass(frozen=True)
class _Job:
    family: CodeFamily
    target: str  # condition name, or "m<index>" for the helper test
    k: int
    messages: list[dict[str, str]]

    @property
    def pid(self) -> str:
        return self.family.pid


def plan_code_jobs(families: Sequence[CodeFamily], config: CodeProbeConfig) -> list[_Job]:
    jobs: list[_Job] = []
    for family in families:
        if config.stage0:
            for i in range(len(family.packet.helpers)):
                msgs = helper_prompt(family.packet, i, show_asserts=config.show_helper_asserts)
                jobs += [_Job(family, f"m{i}", k, msgs) for k in range(config.k)]
        for condition in config.conditions:
            msgs = condition_prompt(family, condition)
            jobs += [_Job(family, condition, k, msgs) for k in range(config.k)]
    return jobs


def grade_answer(family: CodeFamily, target: str, text: str, config: CodeProbeConfig) -> Verdict:
    """Grade a student's response to ``target`` ("m<i>": the helper test, else a condition)."""
    code = extract_code(text)
    if target.startswith("m"):
        return grade_helper(family.packet, int(target[1:]), code, timeout_s=config.timeout_s)
    return grade_program(family.problem, code, max_cases=config.max_cases, timeout_s=config.timeout_s)


async def run_code_probe(
    families: Sequence[CodeFamily],
    config: CodeProbeConfig,
    *,
    client: Client,
    store: Store,
    run_id: str,
    source: str = "code",
    workers: int | None = None,
    sandbox_workers: int = 2,
    on_done: Callable[[Rollout], None] | None = None,
    on_failed: Callable[[FailedJob], None] | None = None,
) -> int:
    """Run the helper test and the code ladder; returns the number of rollouts stored.

    `source` names the packet set (e.g. the teacher's provider/model) in each rollout. Grading runs
    in threads, at most `sandbox_workers` at once, while other calls are in flight.
    """
    gate = asyncio.Semaphore(max(1, sandbox_workers))

    async def grade(job: _Job, text: str) -> Verdict:
        async with gate:
            return await asyncio.to_thread(grade_answer, job.family, job.target, text, config)

    return await run_jobs(plan_code_jobs(families, config), grade, client=client, store=store, run_id=run_id,
                          student=config.student, source=lambda _: source, temperature=config.temperature,
                          max_tokens=config.max_tokens, workers=workers, on_done=on_done, on_failed=on_failed)


async def load_code_families(store: Store, source: str) -> list[CodeFamily]:
    """Every stored code problem with an accepted packet from `source` (see `compiler.code.load_packets`)."""
    packets = await load_packets(store, source)
    return [CodeFamily(p, packets[p.pid]) for p in await store.problems(kind="code") if p.pid in packets]


def collect_code_results(families: Sequence[CodeFamily], rollouts: Sequence[Rollout]) -> list[FamilyResults]:
    """Per family, the K verdicts of each helper (Stage 0, "m<i>") and of each condition; an
    ungraded rollout (grading failed) is left out."""
    return results_from_rollouts(
        [(f.pid, range(len(f.packet.helpers))) for f in families],
        ((r.pid, r.target, r.k, r.verdict.accepted) for r in rollouts if r.verdict.graded),
    )


__all__ = ["CODE_CONDITIONS", "CodeFamily", "CodeProbeConfig", "collect_code_results", "condition_prompt",
           "extract_code", "grade_answer", "grade_helper", "grade_program", "helper_prompt", "load_code_families", "plan_code_jobs",
           "run_code_probe", "student_interface"]
