"""Store schema v10 and v11 on real files: code packets in a table of their own, each prompt's request
stored once for its K calls, and stores written at v7 (packets inside compile-attempt plans, every
call with its whole request) migrated with every packet and every cached call kept."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import zstandard

from oracleladder.clients import ChatRequest, ChatResult
from oracleladder.code.packet import CodePacket
from oracleladder.domains.code import load_packets
from oracleladder.schemas import Rollout, Verdict
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.store.schema import MIGRATIONS, SCHEMA_VERSION

K = 8


def _prompt(shared_data: Path) -> str:
    """A long prompt: real response text from the release, as a prompt quoting earlier work would be."""
    tails = [json.loads(line)["response_tail"] for line in (shared_data / "responses_sample.jsonl").open()]
    return "Check this solution step by step:\n" + "\n".join(tails[:6])


def _requests(prompt: str, pid: str = "p1") -> list[ChatRequest]:
    return [ChatRequest(provider="openai", model="student", messages=[{"role": "user", "content": f"{pid}: {prompt}"}],
                        params={"max_tokens": 16384, "temperature": 1.0}, k=k) for k in range(K)]


def _rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _v7_store(path: Path) -> sqlite3.Connection:
    """An empty store as schema v7 made it."""
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:7]:
        for stmt in step:
            con.execute(stmt)
    con.execute("PRAGMA user_version = 7")
    return con


def _v7_pack(text: str) -> str | bytes:  # how v7 stored a text: plain below 512 bytes, else zstd
    return text if len(text.encode()) < 512 else zstandard.compress(text.encode(), 3)


def _packet(plan: str) -> dict:
    gold = "def double(x: int) -> int:\n    return 2 * x\n"
    return {"plan": plan,
            "helpers": [{"name": "double", "signature": "def double(x: int) -> int:", "docstring": "Twice x.",
                         "asserts": ["assert double(1) == 2", "assert double(0) == 0"], "gold": gold}],
            "program": gold + "\nprint(double(int(input())))\n"}


async def test_k_calls_of_one_prompt_store_the_prompt_once(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "once.sqlite"
    prompt = _prompt(shared_data)
    one, other = _requests(prompt), _requests(prompt, pid="p2")
    async with Store.open(path) as store:
        for request in one + other:
            await store.put_call(request, ChatResult(text=f"\\boxed{{{request.k}}}", tokens_out=4))
        records = [await store.get_call_record(r.key()) for r in one]
        assert [r.request if r else None for r in records] == [r.model_dump(mode="json") for r in one]
        assert [r.request for r in await store.calls()] == [r.model_dump(mode="json") for r in one + other]

    # two prompts, 2K calls: two request bodies, each the compressed prompt once
    assert _rows(path, "SELECT COUNT(*) FROM calls") == [(2 * K,)]
    [(bodies, body_bytes)] = _rows(path, "SELECT COUNT(*), SUM(length(body)) FROM requests")
    compressed = len(zstandard.compress(one[0].model_dump_json().encode(), 3))
    assert bodies == 2 and body_bytes < 2 * 1.1 * compressed < len(prompt)
    assert _rows(path, "SELECT COUNT(DISTINCT request_id), MIN(k), MAX(k) FROM calls") == [(2, 0, K - 1)]


async def test_a_v7_store_migrates_with_every_cached_call_a_hit(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "v7.sqlite"
    prompt = _prompt(shared_data)
    requests = _requests(prompt) + _requests("What is 2+2?", pid="p2")
    answers = {r.key(): ChatResult(text=(prompt if r.k % 2 else f"\\boxed{{{r.k}}}"), tokens_in=900 + r.k,
                                   tokens_out=50, latency_s=0.5, finish_reason="stop") for r in requests}
    failed = _requests("Never answered.", pid="p3")[0]
    con = _v7_store(path)
    for r in requests:
        a = answers[r.key()]
        con.execute("INSERT INTO calls (key, provider, model, request, response, tokens_in, tokens_out, latency_s, "
                    "finish_reason, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'r', 't')",
                    (r.key(), r.provider, r.model, _v7_pack(r.model_dump_json()), _v7_pack(a.text), a.tokens_in,
                     a.tokens_out, a.latency_s, a.finish_reason))
    con.execute("INSERT INTO calls (key, provider, model, request, error, run_id, created_at) "
                "VALUES (?, 'openai', 'student', ?, 'HTTP 400', 'r', 't')", (failed.key(), failed.model_dump_json()))
    # a rollout whose response is its call's (NULL in v7) still reads it through the call
    con.execute("INSERT INTO rollouts (student, source, pid, target, k, call_key, run_id, response, label, reason, "
                "created_at) VALUES ('openai/student', 'release', 'p1', 'C1_direct', 1, ?, 'r', NULL, 'ACCEPT', "
                "'match', 't')", (requests[1].key(),))
    con.commit()
    con.close()

    async with Store.open(path) as store:
        assert all(store.cached(r.key()) for r in requests) and not store.cached(failed.key())
        assert [await store.get_call(r.key()) for r in requests] == [answers[r.key()] for r in requests]
        assert await store.get_call(failed.key()) is None
        records = await store.calls()
        assert [c.request for c in records] == [r.model_dump(mode="json") for r in [*requests, failed]]
        assert [(c.key, c.error) for c in records][-1] == (failed.key(), "HTTP 400")
        assert [r.response for r in await store.rollouts()] == [prompt]
    assert _rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert _rows(path, "SELECT COUNT(*) FROM requests") == [(3,)]  # three prompts, 2K + 1 calls
    assert _rows(path, "PRAGMA integrity_check") == [("ok",)]
    assert _rows(path, "PRAGMA foreign_key_check") == []


async def test_a_v7_store_migrates_its_packets_out_of_the_plans(tmp_path: Path) -> None:
    """v7 kept a code packet only as the plan of its passing attempt (with the prompt version in
    it); after the migration the same packets are read from the packets table."""
    path = tmp_path / "v7-packets.sqlite"
    first, fixed, other = _packet("First try."), _packet("Double the input."), _packet("Another problem.")
    attempts = [
        ("HumanEval/0", "openai/teacher", 0, {**first, "prompt_version": "v-a"}, 0),  # rejected
        ("HumanEval/0", "openai/teacher", 1, {**fixed, "prompt_version": "v-a"}, 1),  # accepted
        ("HumanEval/1", "openai/teacher", 0, {**other, "prompt_version": "v-a"}, 1),
        ("HumanEval/1", "openai/other", 0, {**first, "prompt_version": "v-b"}, 0),  # never accepted
        ("m1", "openai/teacher", 0, {"milestones": [{"prompt": "2+2?"}]}, 1),  # a math plan: no packet
    ]
    con = _v7_store(path)
    for pid, source, attempt, plan, passed in attempts:
        con.execute("INSERT INTO compile_attempts (pid, source, granularity, attempt, plan, errors, passed, "
                    "created_at) VALUES (?, ?, '', ?, ?, '[]', ?, 't')", (pid, source, attempt, json.dumps(plan),
                                                                        passed))
    con.commit()
    con.close()

    async with Store.open(path) as store:
        assert await load_packets(store, "openai/teacher") == {
            "HumanEval/0": CodePacket.model_validate(fixed), "HumanEval/1": CodePacket.model_validate(other)}
        assert await load_packets(store, "openai/teacher", ["HumanEval/1"]) == {
            "HumanEval/1": CodePacket.model_validate(other)}
        assert await load_packets(store, "openai/other") == {}
        [stored] = await store.packets("openai/teacher", ["HumanEval/0"])
        assert (stored.attempt, stored.prompt_version, stored.packet) == (1, "v-a", fixed)
        # the attempts keep the teacher's answers as they were
        plans = [a.plan for a in await store.compile_attempts("HumanEval/0", "openai/teacher")]
        assert plans == [{**first, "prompt_version": "v-a"}, {**fixed, "prompt_version": "v-a"}]


async def test_a_rollout_of_a_cached_call_stores_neither_prompt_nor_answer_again(tmp_path: Path,
                                                                                   shared_data: Path) -> None:
    """The K rollouts of a prompt cost their rows only: the answers are in the calls, the prompt
    once in requests."""
    path = tmp_path / "rollouts.sqlite"
    prompt = _prompt(shared_data)
    async with Store.open(path) as store:
        for r in _requests(prompt):
            await store.put_call(r, ChatResult(text=prompt, tokens_out=900))
            await store.put_rollout(Rollout(run_id="run", student="openai/student", pid="p1", target="C1_direct",
                                            k=r.k, call_key=r.key(), response=prompt,
                                            verdict=Verdict(label=Label.ACCEPT, reason="match", extracted="4")))
        assert [x.response for x in await store.rollouts()] == [prompt] * K
    assert _rows(path, "SELECT COUNT(*) FROM rollouts WHERE response IS NOT NULL") == [(0,)]
    assert _rows(path, "SELECT COUNT(*) FROM requests") == [(1,)]


async def test_a_probe_store_stays_near_the_compressed_size_of_its_answers(tmp_path: Path, shared_data: Path) -> None:
    """K calls of a prompt and their rollouts, answers as long as released ones: the file holds
    little beyond the compressed answers (SQLite's default 4 KB pages left ~25% of each answer's
    size unused beside it; the small pages of a new store do not)."""
    path = tmp_path / "size.sqlite"
    tails = [json.loads(line)["response_tail"] for line in (shared_data / "responses_sample.jsonl").open()]
    corpus = "\n\n".join(tails)
    answers = [corpus[i * 997:i * 997 + 6000 + (i * 7919) % 20000] for i in range(200)]
    async with Store.open(path) as store:
        for i, answer in enumerate(answers):
            request = _requests(f"Problem {i // K}.", pid=f"p{i // K}")[i % K]
            await store.put_call(request, ChatResult(text=answer, tokens_out=len(answer) // 4), wait=False)
            await store.put_rollout(Rollout(run_id="run", student="openai/student", pid=f"p{i // K}",
                                            target="C1_direct", k=request.k, call_key=request.key(), response=answer,
                                            verdict=Verdict(label=Label.ACCEPT, reason="match", extracted="4")),
                                    wait=False)
        await store.flush()
        assert [r.response for r in await store.rollouts()] == answers
    compressed = sum(len(zstandard.compress(a.encode(), 3)) for a in answers)
    assert path.stat().st_size < 1.3 * compressed  # 1.43 with 4 KB pages, 1.21 with 1 KB
