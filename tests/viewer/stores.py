"""Stores for the HTML report's tests: released families, probed by synthetic students whose answers are
written to a real store the way a probe run writes them (a call, then its rollout), with truncated answers,
failed jobs and ungraded rollouts among them."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients.base import ChatRequest, ChatResult
from oracleladder.schemas import LADDER, Family, Verdict, to_released
from oracleladder.schemas.jsonl import write_jsonl
from oracleladder.schemas.models import Rollout
from oracleladder.schemas.types import GradeStatus, Label
from oracleladder.store import Store
from oracleladder.store.sqlite import FailedJob
from oracleladder.verify import verify_inprocess

A, B = "openai/student-a", "openai/student-b"  # the synthetic students of most tests
WRONG = r"Let me think. $x^2 + 1 = 0$ has no real root, so the answer is \boxed{987654321}."


def _answer(gold: str, rng: random.Random, p_right: float) -> tuple[str, str]:
    """A response and its finish reason: right, wrong, unboxed, or cut off at max tokens."""
    roll = rng.random()
    if roll < p_right:
        return f"We compute $\\frac{{a}}{{b}}$ step by step.\n\nSo the answer is $\\boxed{{{gold}}}$.", "stop"
    if roll < p_right + 0.1:
        return "The answer is probably forty-two, but I am not sure.", "stop"
    if roll < p_right + 0.2:
        return "Expanding $(x+1)^2 = x^2 + 2x + 1$ and then we continue the long computation of", "length"
    return WRONG, "stop"


async def _fill(path: Path, families: list[Family], students: dict[str, float], k: int, *, grade: bool,
                odd: str, stage0: bool, source: str, seed: int = 0) -> None:
    rng = random.Random(seed)
    async with Store.open(path) as store:
        for student, p_right in students.items():
            run_id = await store.start_run("probe", {"student": student, "k": k, "max_tokens": 256,
                                                     "temperature": 0.7, "source": source})
            failed_one = ungraded_one = False
            for fam in families:
                targets = [(f"m{i}", m.answer) for i, m in fam.tested()] if stage0 else []
                targets += [(c, fam.parent_answer) for c in LADDER.default]
                for target, gold in targets:
                    for kk in range(k):
                        request = ChatRequest(provider="openai", model=student, k=kk,
                                              messages=[{"role": "user", "content": f"{source} {fam.pid} {target}"}])
                        if not failed_one and fam.pid == odd and target == "C2_descriptions":
                            failed_one = True  # a job whose call failed for good: no answer, no verdict
                            await store.put_call(request, None, error="HTTP 500", run_id=run_id, wait=False)
                            await store.put_failed_job(FailedJob(run_id=run_id, student=student, source=source,
                                                                 pid=fam.pid, target=target, k=kk,
                                                                 call_key=request.key(), reason="gave up after 6 attempts"),
                                                       wait=False)
                            continue
                        text, finish = _answer(gold, rng, p_right)
                        if not ungraded_one and fam.pid == odd and target == "C3_mismatched":
                            ungraded_one = True
                            verdict = Verdict(Label.NOT_ACCEPT, "grader pool broke", None, GradeStatus.UNGRADED)
                        elif grade:
                            verdict = verify_inprocess(text, gold)
                        else:
                            right = gold in text
                            verdict = Verdict(Label.ACCEPT if right else Label.NOT_ACCEPT,
                                              "equivalent" if right else ("no boxed" if "boxed" not in text
                                                                          else "not equivalent"),
                                              gold if right else None)
                        await store.put_call(request, ChatResult(text=text, tokens_in=20, tokens_out=30,
                                                                 latency_s=0.1, finish_reason=finish),
                                             run_id=run_id, wait=False)
                        await store.put_rollout(Rollout(run_id=run_id, student=student, pid=fam.pid, target=target, k=kk,
                                                        call_key=request.key(), response=text, verdict=verdict,
                                                        source=source),
                                                wait=False)
            await store.flush()
            await store.finish_run(run_id, "done")


def fill(path: Path, families: list[Family], students: dict[str, float], k: int, *, grade: bool,
         odd: str | None = None, stage0: bool = True, source: str = "release") -> None:
    """Probe ``families`` (already imported into the store at ``path``) with synthetic ``students``
    (name -> chance of a right answer), K = ``k`` per milestone and per condition; ``grade``: grade every
    answer with the real verifier (else a verdict is read off the synthetic answer). Each student has one
    failed job and one ungraded rollout, on family ``odd`` (default: the first). ``stage0``: probe the
    milestones too. ``source``: the roadmap set the families were filed under."""
    asyncio.run(_fill(path, families, students, k, grade=grade, odd=odd or families[0].pid, stage0=stage0,
                      source=source))


async def _fill_released(path: Path, families: list[Family], responses: list[dict]) -> None:
    gold = {f.pid: f.parent_answer for f in families}
    async with Store.open(path) as store:
        run_id = await store.start_run("probe", {"student": "released", "max_tokens": 4096, "source": "release"})
        for r in responses:
            if r["pid"] not in gold:
                continue
            request = ChatRequest(provider="released", model=r["model"], k=r["rollout"],
                                  messages=[{"role": "user", "content": f"{r['pid']} {r['condition']}"}])
            text = r["response_tail"]
            await store.put_call(request, ChatResult(text=text, tokens_in=0, tokens_out=r["n_tokens"], latency_s=0.0,
                                                     finish_reason="length" if r["truncated"] else "stop"),
                                 run_id=run_id, wait=False)
            await store.put_rollout(Rollout(run_id=run_id, student=r["model"], pid=r["pid"], target=r["condition"],
                                            k=r["rollout"], call_key=request.key(), response=text,
                                            verdict=verify_inprocess(text, gold[r["pid"]])), wait=False)
        await store.flush()
        await store.finish_run(run_id, "done")


def fill_released(path: Path, families: list[Family], responses: list[dict]) -> None:
    """The released responses (responses_sample.jsonl: a real model's answers, their tails) as rollouts of
    their model, graded by the real verifier, truncated ones with the finish reason `length`."""
    asyncio.run(_fill_released(path, families, responses))


def import_families(tmp: Path, families: list[Family]) -> Path:
    """A store, tmp / "s.sqlite", holding ``families`` (`ladder import` of their released form)."""
    path, store = tmp / "families.jsonl", tmp / "s.sqlite"
    write_jsonl(path, (to_released(f) for f in families))
    result = CliRunner().invoke(app, ["import", str(path), "--store", str(store)])
    assert result.exit_code == 0, result.output
    return store


def store_attempts(store: Path, student: str, pid: str, source: str = "release") -> dict[tuple[str, int], str]:
    """(target, k) -> what the page must say of it, read from the store's tables directly."""
    con = sqlite3.connect(store)
    try:
        rows = con.execute("SELECT r.target, r.k, r.label, r.status, c.finish_reason FROM rollouts_named r "
                           "JOIN calls c ON c.key = r.call_key WHERE r.student = ? AND r.pid = ? AND r.source = ?",
                           (student, pid, source)).fetchall()
        failed = con.execute("SELECT target, k FROM failed_jobs WHERE student = ? AND pid = ? AND source = ?",
                             (student, pid, source)).fetchall()
    finally:
        con.close()
    out = {(t, k): "call failed" for t, k in failed}
    for t, k, label, status, finish in rows:
        out[(t, k)] = ("UNGRADED" if status == "ungraded" else label) + (" truncated" if finish == "length" else "")
    return out
