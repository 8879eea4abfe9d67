"""A store that stays small: each response is stored once (a rollout points at its call), long
requests and responses are zstd-compressed, a store written before (schema v5, every response
twice) migrates with every reader still returning each rollout's response, and a long cached
answer is served whole after a reopen (read from the file, not kept in memory), and a run writing
its store does not keep the file resident."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
import zstandard

from oracleladder.clients import ChatRequest, ChatResult
from oracleladder.schemas import Rollout, Verdict
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.store.schema import MIGRATIONS, SCHEMA_VERSION
from tests.helpers import rows


def _long_text(release_data: Path) -> str:
    """A real response tail from the release, repeated to a long answer."""
    tails = [json.loads(line)["response_tail"] for line in (release_data / "responses_sample.jsonl").open()]
    return "\n".join(tails[:12])


def _request(i: int, prompt: str = "What is 2+2?") -> ChatRequest:
    return ChatRequest(provider="openai", model="student", messages=[{"role": "user", "content": f"{prompt} #{i}"}],
                       params={"max_tokens": 100}, k=i)


def _rollout(request: ChatRequest, response: str, pid: str = "p1") -> Rollout:
    return Rollout(run_id="run-1", student="openai/student", pid=pid, target="C1_direct", k=request.k,
                   call_key=request.key(), response=response,
                   verdict=Verdict(label=Label.ACCEPT, reason="match", extracted="4"))


async def test_a_response_is_stored_once_and_compressed(tmp_path: Path, release_data: Path) -> None:
    path = tmp_path / "s.sqlite"
    long = _long_text(release_data)
    assert len(long) > 2000
    req_long, req_short = _request(0, "Solve: " + long), _request(1)
    async with Store.open(path) as store:
        await store.put_call(req_long, ChatResult(text=long, tokens_in=900, tokens_out=800))
        await store.put_call(req_short, ChatResult(text="\\boxed{4}", tokens_in=5, tokens_out=3))
        await store.put_rollout(_rollout(req_long, long))
        await store.put_rollout(_rollout(req_short, "\\boxed{4}"))
        # an answer that is not its call's (another process answered the same request) keeps its own text
        await store.put_rollout(_rollout(req_short, "\\boxed{5}", pid="p2"))
        assert [r.response for r in await store.rollouts()] == [long, "\\boxed{4}", "\\boxed{5}"]

    calls = dict(((k, (req, resp)) for k, req, resp in rows(
        path, "SELECT lower(hex(c.key)), q.body, c.response FROM calls c JOIN requests q ON q.id = c.request_id")))
    request, response = calls[req_long.key()]
    assert isinstance(response, bytes) and zstandard.decompress(response).decode() == long
    assert len(response) < len(long.encode()) / 2
    assert isinstance(request, bytes) and json.loads(zstandard.decompress(request)) == req_long.model_dump(
        mode="json", exclude={"k"})  # the request of the prompt's K calls, stored once
    assert calls[req_short.key()][1] == "\\boxed{4}"  # a short text stays plain
    assert rows(path, "SELECT pid, response FROM rollouts_named ORDER BY seq") == [
        ("p1", None), ("p1", None), ("p2", "\\boxed{5}")]

    async with Store.open(path) as store:  # a reopened store serves the long answer whole
        hit = await store.get_call(req_long.key())
        assert hit is not None and hit.text == long and hit.tokens_out == 800
        record = await store.get_call_record(req_long.key())
        assert record is not None and record.request == req_long.model_dump(mode="json")
        # a rollout graded again (regrade) is stored again, still without a copy
        again = (await store.rollouts(pid="p1"))[0]
        await store.put_rollout(again)
        assert (await store.rollouts(pid="p1"))[0].response == long
    assert rows(path, "SELECT COUNT(*) FROM rollouts WHERE response IS NOT NULL") == [(1,)]


async def test_a_text_is_packed_once(tmp_path: Path, release_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a run packs (zstd, the largest part of its store writes' CPU): each call's answer once, the
    request body its K calls share once, and a rollout's answer not again where it is its call's."""
    packed: list[bytes] = []
    compress = zstandard.compress

    def counted(data: bytes, level: int = 3) -> bytes:
        packed.append(data)
        return compress(data, level)

    monkeypatch.setattr(zstandard, "compress", counted)
    long = _long_text(release_data)
    other = long.replace("\\boxed", "\\fbox")  # a long answer that is not its call's
    calls = [_request(0, "Packed once: " + long).model_copy(update={"k": k}) for k in range(4)]  # a prompt's K calls
    async with Store.open(tmp_path / "s.sqlite") as store:
        for call in calls:
            await store.put_call(call, ChatResult(text=long, tokens_in=900, tokens_out=800))
        assert len(packed) == 1 + 4  # the body, then each call's answer
        await store.put_rollout(_rollout(calls[0], long))
        assert len(packed) == 5  # its call's answer: not packed again
        await store.put_rollout(_rollout(calls[1], other, pid="p2"))
        assert packed[5:] == [other.encode()]  # an answer of its own is stored, packed
        assert [r.response for r in await store.rollouts()] == [long, other]
    stored = rows(tmp_path / "s.sqlite", "SELECT pid, response FROM rollouts_named ORDER BY seq")
    assert stored[0] == ("p1", None) and zstandard.decompress(stored[1][1]).decode() == other


def _v5_store(path: Path, long: str) -> None:
    """A store as schema v5 wrote it: every response in its call and again in its rollout."""
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:5]:
        for stmt in step:
            con.execute(stmt)
    con.execute("PRAGMA user_version = 5")
    calls = [("k-long", long), ("k-short", "\\boxed{4}"), ("k-other", "\\boxed{7}")]
    for key, text in calls:
        con.execute("INSERT INTO calls (key, provider, model, request, response, created_at) VALUES (?, 'openai', "
                    "'student', '{}', ?, 't')", (key, text))
    rollouts = [("p1", "k-long", long), ("p2", "k-short", "\\boxed{4}"),
                ("p3", "k-other", "\\boxed{8}"),  # not its call's answer
                ("p4", "k-gone", "\\boxed{9}")]  # its call is not in this store
    for pid, key, text in rollouts:
        con.execute("INSERT INTO rollouts (student, source, pid, target, k, call_key, run_id, response, label, "
                    "reason, extracted, created_at, status) VALUES ('s', 'release', ?, 'C1_direct', 0, ?, 'r', ?, "
                    "'ACCEPT', 'match', NULL, 't', 'graded')", (pid, key, text))
    con.commit()
    con.close()


async def test_a_v5_store_migrates_keeping_every_response(tmp_path: Path, release_data: Path) -> None:
    path = tmp_path / "old.sqlite"
    long = _long_text(release_data)
    _v5_store(path, long)
    async with Store.open(path) as store:
        assert [(r.pid, r.response) for r in await store.rollouts()] == [
            ("p1", long), ("p2", "\\boxed{4}"), ("p3", "\\boxed{8}"), ("p4", "\\boxed{9}")]
        assert (await store.get_call("k-long")).text == long  # type: ignore[union-attr]
        assert await store.rollout_count() == 4
    assert rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(path, "SELECT pid, response FROM rollouts_named ORDER BY seq") == [
        ("p1", None), ("p2", None), ("p3", "\\boxed{8}"), ("p4", "\\boxed{9}")]


def _mapped_file_kb() -> int:
    """This process's resident pages of mapped files, libraries included (Linux's RssFile)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))


@pytest.mark.integration  # writes 5,000 calls (a store of tens of MB): seconds of CPU, out of the fast lane
async def test_a_run_writing_its_store_does_not_keep_the_file_resident(tmp_path: Path, release_data: Path) -> None:
    # a probe at the paper's size writes ~90 MB of store; the process's memory must not grow with it
    words = _long_text(release_data).split()
    rng = random.Random(0)
    path = tmp_path / "s.sqlite"
    async with Store.open(path) as store:
        before = _mapped_file_kb()
        for i in range(5000):
            text = " ".join(rng.choices(words, k=1500))  # ~9,000 characters, ~4 KB compressed
            request = _request(i)
            await store.put_call(request, ChatResult(text=text, tokens_in=10, tokens_out=2000), wait=False)
            await store.put_rollout(_rollout(request, text), wait=False)
        await store.flush()
        grown_kb = _mapped_file_kb() - before
    written_kb = sum(p.stat().st_size for p in tmp_path.iterdir()) // 1024
    assert written_kb > 15_000
    assert grown_kb < written_kb / 10, f"{grown_kb} KB of the store's {written_kb} KB stayed resident"
