"""Schema v19 on a real file: a store made before instructor built the structured bodies
(tests/data/before-instructor, made by the code of 9e255bf: five teachers, each in one structured mode,
three problems each) opens, its structured calls are keyed again by their logical request, none is
lost, and the same compiles run again make no request at all."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

from oracleladder import Endpoint, Experiment
from oracleladder.store import Store
from oracleladder.store.schema import SCHEMA_VERSION
from oracleladder.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "tests" / "data" / "before-instructor"
sys.path.insert(0, str(BEFORE))

from make import PROBLEMS, TEACHERS, problem, teacher  # noqa: E402  (how the file was made)


def _keys(path: Path) -> dict[bytes, tuple[str, str, bytes | None]]:
    with sqlite3.connect(path) as con:
        return {k: (p, m, r) for k, p, m, r in con.execute("SELECT key, provider, model, response FROM calls")}


async def test_a_store_from_before_is_rekeyed_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    path = tmp_path / "before.sqlite"
    shutil.copy(BEFORE / "before.sqlite", path)
    before = _keys(path)
    async with Store.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 23
    after = _keys(path)
    assert len(after) == len(before) == 50  # no call lost
    assert sorted(after.values()) == sorted(before.values())
    moved = set(before) - set(after)
    assert len(moved) == 5 * 4  # each teacher's plan calls (three problems, one re-asked): keyed again
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(problem(i)) + "\n" for i in PROBLEMS))
    async with LoopbackServer(teacher) as srv, Experiment(path) as ex:
        for model, mode in TEACHERS:
            url = srv.openai_base_url if model.startswith("openai/") else srv.anthropic_base_url
            summary = await ex.compile(pool, Endpoint(model, base_urls=[url], structured=mode))
            assert summary.compiled == len(PROBLEMS), (model, summary)
        assert srv.total == 0  # every call, the structured ones too, from the store
