"""Compile a code problem into a validated code packet (paper Appendix O, Table 30).

The code counterpart of `compiler.loop.Compiler`: the teacher returns a `CodePacket` (plan, helper
functions with asserts and gold implementations, full gold program); `code.validate.check_packet`
runs it in the sandbox; a rejected packet goes back to the teacher with the failing checks (the
failing assert with its traceback, expected versus actual of a parent test, ...), for up to
`max_attempts` attempts.

Every attempt is stored with `Store.put_compile_attempt`; the accepted packet also with
`Store.put_packet`, which `load_packets` reads back.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..clients import Client
from ..code.packet import CodePacket
from ..code.problems import MAX_CASES
from ..code.validate import check_packet
from ..prompts import load
from ..runtime import jobs_in_flight
from ..schemas import CheckResult, CodeProblem, FamilyReport
from ..store import Store
from .workers import Outcome, compile_all, store_failed_attempt, teacher_failure

PROMPT_VERSION_KEY = "prompt_version"  # extra key stored beside the packet fields in the plan JSON

FUNCTION_INTERFACE = (
    "INTERFACE: this is a function-completion problem. The program must define the function "
    "`{entry_point}` with exactly the signature given in the problem (keep the problem's imports); "
    "it is tested by calling that function. The program must not read input or print."
)
STDIO_INTERFACE = (
    "INTERFACE: this problem reads standard input and writes standard output. The program must read "
    "the input from standard input, print the answer to standard output, and print nothing else."
)


def interface(problem: CodeProblem) -> str:
    if problem.test_code:
        return FUNCTION_INTERFACE.replace("{entry_point}", problem.entry_point or "")
    return STDIO_INTERFACE


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
    fails = report.failures()
    if not fails:
        return f"Packet {report.pid}: all checks passed."
    lines = [f"The code packet for problem {report.pid} failed {len(fails)} check(s):"]
    for c in fails:
        if c.milestone is None:
            where = "Packet"
        else:
            where = f"Helper {c.milestone + 1}"
            if packet is not None and 0 <= c.milestone < len(packet.helpers):
                where += f" ({packet.helpers[c.milestone].name})"
        lines.append(f"- {where} [{c.check}]: {c.reason}")
    return "\n".join(lines)


@dataclass
class CodeCompileOutcome(Outcome):
    pid: str
    packet: CodePacket | None
    attempts: int
    errors: list[CheckResult] = field(default_factory=list)  # the last attempt's failures

    @property
    def ok(self) -> bool:
        return self.packet is not None


@dataclass
class CodeCompiler:
    """One teacher, one store: compiles code problems into validated packets with the retry loop."""

    client: Client
    store: Store
    max_attempts: int = 3
    max_cases: int = MAX_CASES
    show_reference: bool = True
    check_concurrency: int = 2  # sandbox checks at once (each runs its own small thread pool)
    max_tokens: int = 4096  # a packet is long JSON; a provider's small default would truncate it
    _gate: asyncio.Semaphore | None = field(default=None, init=False, repr=False)

    @property
    def source(self) -> str:
        return self.client.name

    async def _check(self, packet: CodePacket, problem: CodeProblem) -> FamilyReport:
        if self._gate is None:
            self._gate = asyncio.Semaphore(max(1, self.check_concurrency))
        async with self._gate:
            return await asyncio.to_thread(check_packet, packet, problem, max_cases=self.max_cases)

    async def compile(self, problem: CodeProblem) -> CodeCompileOutcome:
        await self.store.put_problem(problem)  # so load_packets can list the code pids
        messages, version = teacher_messages(problem, show_reference=self.show_reference)
        errors: list[CheckResult] = []
        for attempt in range(self.max_attempts):
            request = self.client.request(messages, temperature=0.0, max_tokens=self.max_tokens)
            try:
                parsed = await self.client.structured(request, CodePacket)
            except Exception as exc:  # noqa: BLE001 - no usable packet: nothing to re-ask about; record, stop
                error = teacher_failure(exc, self.max_tokens)
                await store_failed_attempt(self.store, problem.pid, self.source, attempt, None, error)
                return CodeCompileOutcome(problem.pid, None, attempt + 1, [error])
            packet = CodePacket.model_validate(parsed.model_dump())  # a plain CodePacket, not instructor's subclass
            report = scrubbed(await self._check(packet, problem))
            errors = report.failures()
            if not errors:  # the packet before its passing attempt: a rerun skips a problem with one
                await self.store.put_packet(problem.pid, self.source, packet, attempt=attempt, prompt_version=version)
            await self.store.put_compile_attempt(
                problem.pid, self.source, attempt,
                plan={**packet.model_dump(mode="json"), PROMPT_VERSION_KEY: version},
                errors=[e.model_dump(mode="json") for e in errors], passed=not errors,
            )
            await self.store.put_report(report, self.source)
            if not errors:
                return CodeCompileOutcome(problem.pid, packet, attempt + 1)
            messages = [
                *messages,
                {"role": "assistant", "content": packet.model_dump_json()},
                {"role": "user", "content": load("code_retry").render(errors=render_code_errors(report, packet))},
            ]
        return CodeCompileOutcome(problem.pid, None, self.max_attempts, errors)

    async def compile_all(
        self,
        problems: Sequence[CodeProblem],
        *,
        concurrency: int | None = None,
        on_done: Callable[[CodeCompileOutcome], None] | None = None,
    ) -> list[CodeCompileOutcome]:
        """Compile every problem, ``concurrency`` at a time (default: ``JOBS_PER_SLOT`` per client
        slot); a failing problem never stops the run."""
        return await compile_all(problems, self.compile, lambda p, e: CodeCompileOutcome(p.pid, None, 0, [e]),
                                 concurrency=jobs_in_flight(self.client.concurrency, concurrency),
                                 on_done=on_done, stopped=lambda: self.client.budget_stop)


async def load_packets(store: Store, source: str, pids: Sequence[str] | None = None) -> dict[str, CodePacket]:
    """The accepted packet of each code problem compiled by `source` (of `pids` only, when given)."""
    return {p.pid: CodePacket.model_validate(p.packet) for p in await store.packets(source, pids)}


__all__ = ["CodeCompileOutcome", "CodeCompiler", "interface", "load_packets", "render_code_errors", "scrub",
           "teacher_messages"]
