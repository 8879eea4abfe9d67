"""A probe of a scripted student (in process) whose answers per prompt are known.

Each prompt (a milestone alone, or a family under one condition) is answered correctly on its
first n calls and wrongly after, so every family's K verdicts, outcome and five-way label can be
derived by hand and compared with what the prober stored.
"""

from __future__ import annotations

import collections
import threading
from pathlib import Path

from oracleladder.clients import BadRequestError, ChatRequest, Client
from oracleladder.domains import MathDomain
from oracleladder.domains.math import collect_results
from oracleladder.domains.math.prompts import condition_prompt, description, stage0_prompt
from oracleladder.ladder import ProbeConfig
from oracleladder.ladder.outcomes import Gap, Outcome, classify, parent_outcome
from oracleladder.probe.runner import run_probe
from oracleladder.schemas import LADDER, Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.store import FailedJob, Store
from oracleladder.testing import FakeProvider
from oracleladder.verify import verify_inprocess
from oracleladder.workers import WorkerPool

K = 3
WRONG = r"I think it is \boxed{987654321}."

# correct answers out of K, per family (by position) and target; everything unlisted is 0
PLAN = {
    0: {"C1_direct": 3, "m*": 3},
    1: {"C2_descriptions": 1, "C3_gold_answers": 3, "m*": 3},
    2: {"m*": 1},
    3: {"C3_gold_answers": 2, "m0": 3},
}
EXPECTED = {  # (tau, family position) -> (outcome, five-way label)
    (1, 0): (Outcome.DIRECT, Gap.DIRECT),
    (1, 1): (Outcome.ROADMAP_NEEDED, Gap.ROADMAP),
    (1, 2): (Outcome.UNRECOVERED, Gap.COMPOSITION),
    (1, 3): (Outcome.ANSWERS_NEEDED, Gap.MISSING_MS),
    (3, 0): (Outcome.DIRECT, Gap.DIRECT),
    (3, 1): (Outcome.ANSWERS_NEEDED, Gap.MS_EXEC),
    (3, 2): (Outcome.UNRECOVERED, Gap.COMPOSITION),
    (3, 3): (Outcome.UNRECOVERED, Gap.CAPABILITY),
}


def _gradable(family: Family) -> bool:
    """Families whose own golds the verifier accepts when boxed (some released golds are garbled)."""
    golds = [family.parent_answer] + [m.answer for _, m in family.tested()]
    return len(family.tested()) >= 2 and all(verify_inprocess(f"\\boxed{{{g}}}", g).accepted for g in golds)


async def test_probe_outcomes_and_labels_match_hand_derivation(tmp_path: Path, release_data: Path,
                                                               verifier: WorkerPool) -> None:
    pool_families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if _gradable(f)]
    families = pool_families[:4]
    assert len(families) == 4

    # every user prompt the probe will send -> (correct answer, how many of K calls get it)
    script: dict[str, tuple[str, int]] = {}
    for pos, family in enumerate(families):
        plan = PLAN[pos]
        for index, milestone in family.tested():
            n = plan.get(f"m{index}", plan.get("m*", 0))
            script[stage0_prompt(milestone)[1]["content"]] = (milestone.answer, n)
        for condition in LADDER.default:
            msgs, borrowed = condition_prompt(family, condition, families, seed=7)
            assert family.pid not in borrowed
            script[msgs[1]["content"]] = (family.parent_answer, plan.get(condition, 0))
    seen: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def student(request: ChatRequest) -> str:
        user = request.messages[-1]["content"]
        gold, n_correct = script[user]
        with lock:
            i = seen[user]
            seen[user] += 1
        return f"Done: \\boxed{{{gold}}}" if i < n_correct else WRONG

    name = "openai/scripted"
    config = ProbeConfig(student=name, k=K, seed=7, max_tokens=64)
    async with Store.open(tmp_path / "probe.sqlite") as store:
        client = Client(FakeProvider(student), model="scripted", cache=store, concurrency=8)
        stored = await run_probe(MathDomain(verifier), families, config, client=client, store=store, run_id="r1",
                                 workers=8)
        rollouts = await store.rollouts(student=name)

    n_milestones = sum(len(f.tested()) for f in families)
    assert stored == len(rollouts) == K * (n_milestones + len(LADDER.default) * len(families))
    results = collect_results(families, rollouts)
    for (tau, pos), (outcome, label) in EXPECTED.items():
        fam = results[pos]
        assert fam.pid == families[pos].pid
        assert parent_outcome(fam.ladder, tau) is outcome, (tau, pos)
        assert classify(fam, tau) is label, (tau, pos)
    # controls: C2_random and C3_mismatched never carry the family's own roadmap content
    for family in families:
        own = [description(m) for _, m in family.tested()]
        rand, _ = condition_prompt(family, "C2_random", families, seed=7)
        assert not any(d in rand[1]["content"] for d in own)
        mism, donors = condition_prompt(family, "C3_mismatched", families, seed=7)
        assert donors and family.pid not in donors


async def test_rerun_is_served_from_the_cache(tmp_path: Path, release_data: Path, verifier: WorkerPool) -> None:
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if _gradable(f)][:3]
    config = ProbeConfig(student="openai/echo", k=2, conditions=("C1_direct", "C2_generic"), stage0=False)
    provider = FakeProvider(lambda request: WRONG)
    for attempt in range(2):
        async with Store.open(tmp_path / "cache.sqlite") as store:
            client = Client(provider, model="echo", cache=store)
            await run_probe(MathDomain(verifier), families, config, client=client, store=store, run_id=f"r{attempt}")
        assert len(provider.requests) == 2 * 2 * len(families)  # the second run asked nothing


async def test_a_call_failing_for_good_fails_its_job_not_the_run(tmp_path: Path, release_data: Path,
                                                                verifier: WorkerPool) -> None:
    """A permanent error (a 400) on one prompt fails that prompt's K jobs: each stored as a failed job
    with its reason, its call stored failed, never an answer; every other job is answered; the rerun
    asks exactly the failed calls again (the rest come from the store) and supersedes the failures."""
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if _gradable(f)][:2]
    config = ProbeConfig(student="openai/student", k=2, conditions=("C1_direct", "C3_gold_answers"), stage0=False)
    c3 = condition_prompt(families[1], "C3_gold_answers", families)[0][-1]["content"]
    outage = True

    def student(request: ChatRequest) -> str:
        if outage and request.messages[-1]["content"] == c3:
            raise BadRequestError("the maximum context length is 4096 tokens")
        return WRONG

    provider = FakeProvider(student)
    failed: list[FailedJob] = []
    async with Store.open(tmp_path / "s.sqlite") as store:
        client = Client(provider, model="student", cache=store)
        stored = await run_probe(MathDomain(verifier), families, config, client=client, store=store, run_id="r1",
                                 on_failed=failed.append)
        assert stored == 2 * 2 * 2 - 2 and len(provider.requests) == 2 * 2 * 2
        assert sorted((f.pid, f.target, f.k) for f in failed) == [(families[1].pid, "C3_gold_answers", 0),
                                                                   (families[1].pid, "C3_gold_answers", 1)]
        assert all("BadRequestError" in f.reason and "4096 tokens" in f.reason for f in failed)
        assert await store.failed_jobs(student="openai/student") == failed
        for f in failed:
            record = await store.get_call_record(f.call_key)
            assert record is not None and record.result is None and "4096 tokens" in (record.error or "")

        outage = False
        rerun = await run_probe(MathDomain(verifier), families, config, client=client, store=store, run_id="r2")
        assert rerun == 2 * 2 * 2 and len(provider.requests) == 2 * 2 * 2 + 2
        assert await store.failed_jobs(student="openai/student") == []
