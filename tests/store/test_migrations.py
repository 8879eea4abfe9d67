"""Store schema v10 to v13 on real files: code packets in a table of their own, each prompt's request
stored once for its K calls, stores written at v7 (packets inside compile-attempt plans, every
call with its whole request) migrated with every packet and every cached call kept, and stores
written at v11 (call keys as hex text, each rollout with its strings) migrated to v12 (32-byte
keys, rollouts holding name ids, packed families) with every row intact, and the primitive rung's
primitives copied into PRIM's three fields (v13)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import zstandard

from oracleladder.clients import ChatRequest, ChatResult
from oracleladder.domains.code import load_packets
from oracleladder.domains.code.packet import CodePacket
from oracleladder.schemas import Family, Milestone, Primitive, Provenance, Rollout, Verdict, to_released
from oracleladder.schemas.types import GradeStatus, Label, MilestoneType
from oracleladder.store import FailedJob, Store
from oracleladder.store.calls import request_parts
from oracleladder.store.rows import pack
from oracleladder.store.schema import MIGRATIONS, SCHEMA_VERSION, SQL_FUNCTIONS
from tests.helpers import rows, store_at

K = 8


def _prompt(release_data: Path) -> str:
    """A long prompt: real response text from the release, as a prompt quoting earlier work would be."""
    tails = [json.loads(line)["response_tail"] for line in (release_data / "responses_sample.jsonl").open()]
    return "Check this solution step by step:\n" + "\n".join(tails[:6])


def _requests(prompt: str, pid: str = "p1") -> list[ChatRequest]:
    return [ChatRequest(provider="openai", model="student", messages=[{"role": "user", "content": f"{pid}: {prompt}"}],
                        params={"max_tokens": 16384, "temperature": 1.0}, k=k) for k in range(K)]


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


async def test_k_calls_of_one_prompt_store_the_prompt_once(tmp_path: Path, release_data: Path) -> None:
    path = tmp_path / "once.sqlite"
    prompt = _prompt(release_data)
    one, other = _requests(prompt), _requests(prompt, pid="p2")
    async with Store.open(path) as store:
        for request in one + other:
            await store.put_call(request, ChatResult(text=f"\\boxed{{{request.k}}}", tokens_out=4))
        records = [await store.get_call_record(r.key()) for r in one]
        assert [r.request if r else None for r in records] == [r.model_dump(mode="json") for r in one]
        assert [r.request for r in await store.calls()] == [r.model_dump(mode="json") for r in one + other]

    # two prompts, 2K calls: two request bodies, each the compressed prompt once
    assert rows(path, "SELECT COUNT(*) FROM calls") == [(2 * K,)]
    [(bodies, body_bytes)] = rows(path, "SELECT COUNT(*), SUM(length(body)) FROM requests")
    compressed = len(zstandard.compress(one[0].model_dump_json().encode(), 3))
    assert bodies == 2 and body_bytes < 2 * 1.1 * compressed < len(prompt)
    assert rows(path, "SELECT COUNT(DISTINCT request_id), MIN(k), MAX(k) FROM calls") == [(2, 0, K - 1)]


async def test_a_v7_store_migrates_with_every_cached_call_a_hit(tmp_path: Path, release_data: Path) -> None:
    path = tmp_path / "v7.sqlite"
    prompt = _prompt(release_data)
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
    assert rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(path, "SELECT COUNT(*) FROM requests") == [(3,)]  # three prompts, 2K + 1 calls
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]
    assert rows(path, "PRAGMA foreign_key_check") == []


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
                                                                                   release_data: Path) -> None:
    """The K rollouts of a prompt cost their rows only: the answers are in the calls, the prompt
    once in requests."""
    path = tmp_path / "rollouts.sqlite"
    prompt = _prompt(release_data)
    async with Store.open(path) as store:
        for r in _requests(prompt):
            await store.put_call(r, ChatResult(text=prompt, tokens_out=900))
            await store.put_rollout(Rollout(run_id="run", student="openai/student", pid="p1", target="C1_direct",
                                            k=r.k, call_key=r.key(), response=prompt,
                                            verdict=Verdict(label=Label.ACCEPT, reason="match", extracted="4")))
        assert [x.response for x in await store.rollouts()] == [prompt] * K
    assert rows(path, "SELECT COUNT(*) FROM rollouts WHERE response IS NOT NULL") == [(0,)]
    assert rows(path, "SELECT COUNT(*) FROM requests") == [(1,)]


async def test_a_probe_store_stays_near_the_compressed_size_of_its_answers(tmp_path: Path, release_data: Path) -> None:
    """K calls of a prompt and their rollouts, answers as long as released ones: the file holds
    little beyond the compressed answers (SQLite's default 4 KB pages left ~25% of each answer's
    size unused beside it; the small pages of a new store do not; the zstd level-3 size is the
    yardstick, as in bench/scale.py)."""
    path = tmp_path / "size.sqlite"
    tails = [json.loads(line)["response_tail"] for line in (release_data / "responses_sample.jsonl").open()]
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
    # 1.43 with 4 KB pages, 1.21 with 1 KB (v11); 1.08 at v12 (512-byte pages, rollouts of name ids and
    # 32-byte keys, answers at zstd level 5)
    assert path.stat().st_size < 1.15 * compressed


async def test_a_v11_store_migrates_to_v12_with_every_row_intact(tmp_path: Path, release_data: Path) -> None:
    """A v11 store (keys as 64 hex characters, rollouts with their strings, families as JSON text)
    opens at v12 with every call, rollout, failed job and family read back as v11 stored them."""
    path = tmp_path / "v11.sqlite"
    prompt = _prompt(release_data)
    requests = _requests(prompt) + _requests("What is 2+2?", pid="p2")[:2]
    answers = {r.key(): ChatResult(text=(prompt if r.k % 2 else f"\\boxed{{{r.k}}}"), tokens_in=900 + r.k,
                                   tokens_out=50, latency_s=0.5, finish_reason="stop") for r in requests}
    failed = _requests("Never answered.", pid="p3")[0]
    verdict = Verdict(label=Label.ACCEPT, reason="match", extracted="4")
    rollouts = [Rollout(run_id="run-1", student="openai/student", pid="p1", target="C1_direct", k=r.k,
                        call_key=r.key(), response=answers[r.key()].text, verdict=verdict) for r in requests[:K]]
    rollouts += [  # an answer not its call's, one whose call is not in this store (a key that is no sha256),
        # one of another source and run
        Rollout(run_id="run-1", student="openai/student", pid="p2", target="m0", k=0, call_key=requests[K].key(),
                response="\\boxed{5}", verdict=Verdict(label=Label.NOT_ACCEPT, reason="wrong", extracted="5")),
        Rollout(run_id="run-0", student="openai/student", pid="p2", target="m1", k=0, call_key="k-elsewhere",
                response="\\boxed{6}", verdict=Verdict(label=Label.NOT_ACCEPT, reason="verifier timed out", extracted=None,
                                        status=GradeStatus.UNGRADED)),
        Rollout(run_id="run-2", student="openai/student", pid="p1", target="C1_direct", k=0, call_key=requests[0].key(),
                response=answers[requests[0].key()].text, verdict=verdict, source="openai/teacher"),
    ]
    fam = Family(pid="p1", parent_prompt="Compute 2+3. " + prompt, parent_answer="5",
                 milestones=[Milestone(prompt="What is 2?", answer="2", type=MilestoneType.COMPUTE)],
                 provenance=Provenance(source="release"))
    con = store_at(path, 11)
    for r in [*requests, failed]:
        digest, body, k = request_parts(r)
        con.execute("INSERT OR IGNORE INTO requests (digest, body) VALUES (?, ?)", (digest, body))
        a = answers.get(r.key())
        con.execute("INSERT INTO calls (key, provider, model, request_id, k, response, tokens_in, tokens_out, latency_s, "
                    "finish_reason, error, run_id, created_at) VALUES (?, ?, ?, (SELECT id FROM requests WHERE digest = ?), "
                    "?, ?, ?, ?, ?, ?, ?, 'run-1', '2026-12-04T10:00:00.000+00:00')",
                    (r.key(), r.provider, r.model, digest, k, None if a is None else _v7_pack(a.text),
                     *((a.tokens_in, a.tokens_out, a.latency_s, a.finish_reason, None) if a else (0, 0, 0.0, None, "HTTP 400"))))
    for x in rollouts:  # v7 to v11: the response NULL where it is its call's
        own = None if x.call_key in answers and answers[x.call_key].text == x.response else _v7_pack(x.response)
        con.execute("INSERT INTO rollouts (student, source, pid, target, k, call_key, run_id, response, label, reason, "
                    "extracted, created_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 't', ?)",
                    (x.student, x.source, x.pid, x.target, x.k, x.call_key, x.run_id, own, x.verdict.label.value,
                     x.verdict.reason, x.verdict.extracted, x.verdict.status.value))
    for target in ("m0", "m2"):  # the first was answered since, the second was not
        con.execute("INSERT INTO failed_jobs (student, source, pid, target, k, call_key, run_id, reason, created_at) "
                    "VALUES ('openai/student', 'release', 'p2', ?, 0, ?, 'run-0', 'HTTP 400', 't')",
                    (target, failed.key()))
    con.execute("INSERT INTO families (pid, source, granularity, family, released, created_at, updated_at) "
                "VALUES ('p1', 'release', '', ?, ?, 't', 't')",
                (fam.model_dump_json(), json.dumps(to_released(fam))))
    con.commit()
    con.close()

    async with Store.open(path) as store:
        assert await store.rollouts() == rollouts
        assert await store.rollouts(student="openai/student", source="release", pid="p2") == rollouts[K:K + 2]
        assert await store.rollouts(run_id="run-2") == rollouts[-1:]
        assert await store.rollout_count(run_id="run-1") == K + 1
        assert await store.rollout_count(status=GradeStatus.UNGRADED) == 1
        assert all(store.cached(r.key()) for r in requests) and not store.cached(failed.key())
        assert [await store.get_call(r.key()) for r in requests] == [answers[r.key()] for r in requests]
        records = await store.calls()
        assert [(c.key, c.provider, c.model, c.request, c.result, c.error, c.run_id, c.created_at) for c in records] == [
            (r.key(), r.provider, r.model, r.model_dump(mode="json"), answers.get(r.key()),
             None if r.key() in answers else "HTTP 400", "run-1", "2026-12-04T10:00:00.000+00:00")
            for r in [*requests, failed]]
        assert [(j.target, j.call_key) for j in await store.failed_jobs()] == [("m2", failed.key())]
        assert await store.families() == [fam]
        assert await store.released_records() == [json.loads(json.dumps(to_released(fam)))]
        # a rerun of the same jobs (their calls cached) neither duplicates the rows nor takes them over: they
        # keep the run that paid for their calls (issue 43), and the rerun is recorded as reusing them
        for x in rollouts[:K]:
            await store.put_rollout(x.model_copy(update={"run_id": "run-3"}))
        assert await store.rollout_count() == len(rollouts) and await store.rollouts() == rollouts
        assert await store.rollouts(run_id="run-3") == [] and await store.reused(rollouts[:K]) == (K, 1)
        await store.put_failed_job(FailedJob(run_id="run-3", student="openai/student", source="release", pid="p9",
                                             target="m0", k=0, call_key=failed.key(), reason="HTTP 400"))
        assert [j.pid for j in await store.failed_jobs(run_id="run-3")] == ["p9"]

    assert rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]
    assert rows(path, "PRAGMA foreign_key_check") == []
    # the keys are 32 bytes where they are sha256 digests, as they were elsewhere; the rollouts hold name ids
    assert rows(path, "SELECT DISTINCT typeof(key), length(key) FROM calls") == [("blob", 32)]
    assert sorted(rows(path, "SELECT DISTINCT typeof(call_key), length(call_key) FROM rollouts")) == [
        ("blob", 32), ("text", 11)]
    assert rows(path, "SELECT DISTINCT typeof(student_ref), typeof(pid_ref), typeof(run_ref) FROM rollouts") == [
        ("integer", "integer", "integer")]
    assert rows(path, "SELECT typeof(family), typeof(released) FROM families") == [("blob", "blob")]
    # rerun, the rollouts of calls packed before (zstd level 3) still keep no copy of their answers
    assert rows(path, "SELECT COUNT(*) FROM rollouts WHERE response IS NOT NULL") == [(2,)]


async def test_a_v12_store_migrates_its_primitives_into_prims_three_fields(tmp_path: Path) -> None:
    """A v12 store's one-sentence primitives (on the families) are PRIM primitives at v13: the text as
    core_concept, provenance teacher, the rung's provenance kept as origin; the families keep theirs."""
    path = tmp_path / "v12.sqlite"
    con = sqlite3.connect(path)
    for name, (n_args, fn) in SQL_FUNCTIONS.items():
        con.create_function(name, n_args, fn)
    for step in MIGRATIONS[:12]:
        for stmt in step:
            con.execute(stmt)
    con.execute("PRAGMA user_version = 12")
    fams = [Family(pid=pid, parent_prompt="Compute 2+3.", parent_answer="5",
                   milestones=[Milestone(prompt="What is 2?", answer="2", type=MilestoneType.COMPUTE)],
                   provenance=Provenance(source=source), primitive=primitive)
            for pid, source, primitive in [
                ("p1", "openai/t", Primitive(text="Add the two numbers " + "at once. " * 80, provenance="teacher",
                                             teacher="openai/t", prompt_hash="abc")),
                ("p1", "release", Primitive(text="Count up from the larger.", provenance="teacher-primitives-only",
                                            teacher="openai/u")),
                ("p2", "release", None)]]
    for f in fams:  # v12 packs a family (zstd when long)
        con.execute("INSERT INTO families (pid, source, granularity, family, released, created_at, updated_at) "
                    "VALUES (?, ?, '', ?, ?, 't', 't')", (f.pid, f.provenance.source, pack(f.model_dump_json()),
                                                          pack(json.dumps(to_released(f)))))
    con.commit()
    con.close()
    async with Store.open(path) as store:
        assert [(p.pid, p.provenance, p.author, p.core_concept, p.origin, p.essential_property)
                for p in await store.primitives()] == [
            ("p1", "teacher", "openai/t", fams[0].primitive.text, "teacher", ""),
            ("p1", "teacher", "openai/u", "Count up from the larger.", "teacher-primitives-only", "")]
        assert await store.families() == fams
    assert rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
