"""A judge's PRIM row names the rollout it judged (schema v22, ``rollout_call``): two samples of one problem
made at two budgets keep two score rows; a v21 store's rows take the call key of the one rollout they can
have judged, and keep '' (read by no report) where the sample was made at two settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oracleladder.store import PrimScore, Store
from oracleladder.store.rows import pack_key
from oracleladder.store.schema import MIGRATIONS, SCHEMA_VERSION, SQL_FUNCTIONS

LOW, HIGH, ALONE = "a" * 64, "b" * 64, "c" * 64  # call keys: p1's sample at two budgets, p2's at one
SOURCE = "prim:release"


def _score(pid: str, call: str, score: float) -> PrimScore:
    return PrimScore(student="openai/s", source=SOURCE, pid=pid, target="prim_discovery", k=0, judge="openai/j",
                     status="scored", validity=1, score=score, rollout_call=call)


async def test_two_budgets_keep_two_score_rows(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "s.sqlite") as store:
        await store.put_prim_score(_score("p1", LOW, 0.0))
        await store.put_prim_score(_score("p1", HIGH, 1.0))
        await store.put_prim_score(_score("p1", HIGH, 0.8))  # the same rollout scored again: replaced
        assert [(s.rollout_call, s.score) for s in await store.prim_scores()] == [(LOW, 0.0), (HIGH, 0.8)]


async def test_a_v21_stores_rows_take_the_one_rollout_they_judged(tmp_path: Path) -> None:
    path = tmp_path / "v21.sqlite"
    con = sqlite3.connect(path)
    for name, (n_args, fn) in SQL_FUNCTIONS.items():
        con.create_function(name, n_args, fn)
    for step in MIGRATIONS[:21]:
        for stmt in step:
            con.execute(stmt)
    con.execute("PRAGMA user_version = 21")
    for name in ("openai/s", SOURCE, "p1", "p2", "prim_discovery", "C1_direct", "run"):
        con.execute("INSERT INTO names (name) VALUES (?)", (name,))
    ref = {name: i for i, name in con.execute("SELECT id, name FROM names")}
    for pid, target, call in (("p1", "prim_discovery", LOW), ("p1", "prim_discovery", HIGH),
                              ("p2", "prim_discovery", ALONE), ("p2", "C1_direct", ALONE)):
        con.execute("INSERT INTO rollouts (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, label, "
                    "reason, created_at) VALUES (?, ?, ?, ?, 0, ?, ?, 'NOT_ACCEPT', '', 't')",
                    (ref["openai/s"], ref[SOURCE], ref[pid], ref[target], pack_key(call), ref["run"]))
    for pid, target in (("p1", "prim_discovery"), ("p2", "prim_discovery"), ("p2", "C1_direct")):
        con.execute("INSERT INTO prim_scores (student, source, pid, target, k, judge, status, score, reason, evidence, "
                    "call_keys, run_id, created_at) VALUES ('openai/s', ?, ?, ?, 0, 'openai/j', 'scored', 1.0, '', "
                    "'{}', '[]', 'r', 't')", (SOURCE, pid, target))
        con.execute("INSERT INTO prim_answer_verdicts (student, source, pid, target, k, judge, verdict, reason, "
                    "call_keys, run_id, created_at) VALUES ('openai/s', ?, ?, ?, 0, 'openai/j', 'correct', '', '[]', "
                    "'r', 't')", (SOURCE, pid, target))
    con.commit()
    con.close()
    async with Store.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        expected = [("p1", "prim_discovery", ""), ("p2", "prim_discovery", ALONE), ("p2", "C1_direct", ALONE)]
        assert [(s.pid, s.target, s.rollout_call) for s in await store.prim_scores()] == expected
        assert [(v.pid, v.target, v.rollout_call) for v in await store.answer_verdicts()] == expected
