"""Schema v21 on a store from before (issue 43, item 4): calls a store keyed by the path a server listed
its GGUF by, as typed (``/models/smollm2.gguf``), are keyed again by the model's identity (the file's
name, `served_identity`), so a rerun at a server that spells the same file another way (``./smollm2.gguf``)
asks nothing, and says which identity the cached calls matched.

The store from before: schema v20 as its migrations made it (`store_at`), filled by a probe whose requests
name the model as that code named it, by the one model the server listed, its path (``--model-name``
gives the same name today); then marked v20, as that code left it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oracleladder import Experiment
from oracleladder.experiment import Endpoint
from oracleladder.store import Store
from oracleladder.store.schema import MIGRATIONS
from oracleladder.testing import LoopbackServer
from tests.helpers import rows, store_at

S = "openai/smollm2"
THEN, NOW = "/models/smollm2.gguf", "./smollm2.gguf"  # the server's spelling of one file, then and now
V20 = 20  # the schema before v21 (MIGRATIONS[20] takes a store to v21)


def _answer(messages: list[dict], body: dict) -> str:
    return "The answer is \\boxed{1}."


async def _probe(store: Path, server: LoopbackServer, said: list[str], model_name: str | None = None) -> int:
    """A C1 probe of the store's first three families; the calls it asked the server."""
    before = server.total
    async with Experiment(store, notify=said.append) as ex:
        await ex.probe(Endpoint(S, base_urls=[server.openai_base_url], model_name=model_name), k=2,
                       conditions=["C1"], stage0=False, limit=3, max_tokens=64)
    return server.total - before


async def test_calls_keyed_by_a_path_then_answer_a_rerun_at_another_spelling(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "before.sqlite"
    store_at(store, V20).close()
    async with Experiment(store) as ex:
        await ex.import_families(release_data / "families_sample.jsonl")
    with LoopbackServer(script=_answer, served=THEN) as then:
        asked = await _probe(store, then, [], model_name=THEN)
    assert asked == 4  # the sample's first family has an unusable reference answer: two families at K = 2
    con = sqlite3.connect(store)
    con.execute("DROP TABLE call_identities")
    con.execute(f"PRAGMA user_version = {V20}")
    con.close()
    assert rows(store, "SELECT DISTINCT model FROM calls") == [(THEN,)]
    keys_then = rows(store, "SELECT key FROM calls ORDER BY rowid")

    said: list[str] = []
    with LoopbackServer(script=_answer, served=NOW) as now:
        assert await _probe(store, now, said) == 0  # every call answered from the store
    assert f"4 calls cached as calls of '{THEN}' (the path a server listed, before calls named the model by its " \
           "file) answer as calls of 'smollm2.gguf'" in said
    assert rows(store, "PRAGMA user_version") == [(len(MIGRATIONS),)]
    assert rows(store, "SELECT DISTINCT model FROM calls") == [("smollm2.gguf",)]
    assert rows(store, "SELECT key FROM calls ORDER BY rowid") != keys_then
    async with Store.open(store) as s:
        rollouts = await s.rollouts(student=S)
        assert len(rollouts) == 4 and None not in [await s.get_call(r.call_key) for r in rollouts]
        assert {r.run_id for r in rollouts} == {(await s.runs("probe"))[0].id}  # the run that paid keeps them
        assert await s.spelled_before("openai", "smollm2.gguf") == {THEN: 4}
