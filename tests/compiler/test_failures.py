"""A teacher answer the compiler cannot use (not JSON, or the wrong JSON) is a stored failed attempt
with the reason, re-asked by the compiler's own loop (one teacher call per attempt, none hidden in
a re-ask of the structured call); the other problems compile, and a rerun replays every call from
the store."""

from __future__ import annotations

import json
from pathlib import Path

from oracleladder.clients import ChatRequest, Client
from oracleladder.compiler.loop import Compiler
from oracleladder.domains import MathDomain
from oracleladder.schemas import MathProblem
from oracleladder.store import Store
from oracleladder.testing import FakeProvider
from oracleladder.workers import WorkerPool
from tests.helpers.roots import GOOD, asks_plan, solve

PROBLEMS = [
    MathProblem(pid="good", problem="Find the sum of the real roots of $x^2-5x+6=0$.", answer="5"),
    MathProblem(pid="prose", problem="Find the product of the real roots of $x^2-5x+6=0$.", answer="6"),
    MathProblem(pid="shape", problem="Find the larger real root of $x^2-5x+6=0$.", answer="3"),
]


TEACHER_CALLS: list[str] = []


def teacher(request: ChatRequest) -> str:
    messages = request.messages
    if not asks_plan(messages):
        return solve(messages)
    user = messages[1]["content"]
    TEACHER_CALLS.append(user)
    if "product" in user:
        return "I would rather explain the problem in words than write JSON."
    if "larger" in user:
        return json.dumps({"milestones": "none"})
    return json.dumps(GOOD)


async def test_unusable_teacher_answers_are_stored_failures(tmp_path: Path, verifier: WorkerPool) -> None:
    provider = FakeProvider(teacher)
    async with Store.open(tmp_path / "s.sqlite") as store:
        compiler = Compiler(Client(provider, model="t", cache=store), store, MathDomain(verifier), max_attempts=2)
        outcomes = {o.pid: o for o in await compiler.compile_all(PROBLEMS)}
        first = len(provider.requests)
        again = {o.pid: o for o in await compiler.compile_all(PROBLEMS)}
        attempts = {p.pid: await store.compile_attempts(p.pid, "openai/t") for p in PROBLEMS}

    assert outcomes["good"].ok and outcomes["good"].attempts == 1
    for pid, what in (("prose", "Invalid JSON"), ("shape", "milestones: Input should be a valid array")):
        o = outcomes[pid]
        assert not o.ok and o.attempts == 2
        assert [e.check for e in o.errors] == ["teacher"] and "not a valid TeacherPlan" in o.errors[0].reason
        assert what in o.errors[0].reason, o.errors[0].reason
        stored = attempts[pid]
        assert [(a.attempt, a.passed, a.plan) for a in stored] == [(0, False, None), (1, False, None)]
        assert all(a.errors[0]["reason"] == o.errors[0].reason for a in stored)
    # one teacher call per attempt: 1 for "good", 2 for each of the others, and none on the rerun
    asked = [PROBLEMS[[p.problem in u for p in PROBLEMS].index(True)].pid for u in TEACHER_CALLS]
    assert sorted(asked) == ["good", "prose", "prose", "shape", "shape"]
    assert len(provider.requests) == first  # the rerun asked nothing new
    assert {p: (o.ok, [e.reason for e in o.errors]) for p, o in again.items()} == \
        {p: (o.ok, [e.reason for e in o.errors]) for p, o in outcomes.items()}
