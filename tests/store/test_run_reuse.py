"""A rollout keeps the run that paid for its call (issue 43, item 3): the same rollout stored again by
later runs (cached reruns) takes their verdict, never their run, and each later run is recorded as
having reused it, in `runs()` and `reused()`; `merge_stores` carries the record over by its names."""

from __future__ import annotations

from pathlib import Path

from oracleladder.schemas import Rollout, Verdict
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.store.merge import merge_stores

KEY = "ab" * 32  # a call key as ChatRequest.key() makes it (stored as its 32 bytes)


def _rollout(run_id: str, label: Label, k: int = 0) -> Rollout:
    return Rollout(run_id=run_id, student="openai/s", pid="p1", target="C1_direct", k=k, call_key=KEY,
                   response=r"\boxed{3}", verdict=Verdict(label=label, reason="r"), source="release")


async def _probe_then_rerun(store: Store) -> None:
    for run in ("first", "second", "third"):
        await store.start_run("probe", run_id=run)
    await store.put_rollout(_rollout("first", Label.NOT_ACCEPT))
    await store.put_rollout(_rollout("first", Label.NOT_ACCEPT, k=1))
    await store.put_rollout(_rollout("second", Label.ACCEPT))
    await store.put_rollout(_rollout("third", Label.ACCEPT))
    await store.put_rollout(_rollout("third", Label.ACCEPT))  # the same run again: no reuse of its own


async def test_a_rerun_reuses_and_never_takes_over(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "s.sqlite") as store:
        await _probe_then_rerun(store)
        rollouts = await store.rollouts()
        assert [(r.run_id, r.k, r.verdict.label) for r in rollouts] == [("first", 0, Label.ACCEPT),
                                                                       ("first", 1, Label.NOT_ACCEPT)]
        assert {r.id: r.reused for r in await store.runs()} == {"first": 0, "second": 1, "third": 1}
        assert await store.reused(rollouts) == (1, 2)
        assert await store.reused(rollouts[1:]) == (0, 0)
        assert await store.rollouts(run_id="second") == []


async def test_merge_carries_the_reuse_over(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "other.sqlite") as other:  # names of its own first: other ids
        await other.start_run("probe", run_id="elsewhere")
        await other.put_rollout(Rollout(run_id="elsewhere", student="openai/t", pid="q", target="m0", k=0,
                                        call_key="cd" * 32, response="x", verdict=Verdict(label=Label.NOT_ACCEPT,
                                                                                          reason="r")))
    async with Store.open(tmp_path / "s.sqlite") as store:
        await _probe_then_rerun(store)
    await merge_stores(tmp_path / "other.sqlite", [tmp_path / "s.sqlite"])
    async with Store.open(tmp_path / "other.sqlite") as merged:
        assert {r.id: r.reused for r in await merged.runs()} == {"elsewhere": 0, "first": 0, "second": 1,
                                                                 "third": 1}
        assert await merged.reused(await merged.rollouts(student="openai/s")) == (1, 2)
