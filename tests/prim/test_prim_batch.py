"""PRIM's probes in batch mode (`ladder prim probe --batch`) on the loopback server's batch API, as the
ladder's probes are (tests/clients/test_batch.py): every dimension's calls go in one batch, and a run
killed after submitting resumes without submitting anything again."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.prim.probe import DIGESTION, DISCOVERY, EXECUTION, GENERATION
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.clients.test_batch import FAST, _count, _killed_after_submission, _summary

runner = CliRunner()
# a primitive in the three labelled fields, and a boxed answer: every dimension reads what it asks for
ANSWER = "essential_property: a\nsolution_principle: b\ncore_concept: c\nSo \\boxed{0}."


def test_prim_probes_go_in_one_batch_and_a_killed_run_resumes_without_submitting_again(
        tmp_path: Path, release_data: Path) -> None:
    store, families = tmp_path / "prim.sqlite", tmp_path / "families.jsonl"
    gold = release_data / "prim_gold.jsonl"
    pids = {json.loads(line)["pid"] for line in gold.read_text().splitlines()}
    families.write_text("".join(line + "\n" for line in (release_data / "families_sample.jsonl").read_text().splitlines()
                                if json.loads(line)["pid"] in pids))
    for args in (["import", str(families)], ["prim", "import", str(gold)]):
        result = runner.invoke(app, [*args, "--store", str(store)])
        assert result.exit_code == 0, result.output
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=60) as server:
        args = ["prim", "probe", "--student", "openai/student", "--primitive-source", "gold", "--store", str(store),
                "--base-url", server.openai_base_url, "--json", *FAST]
        _killed_after_submission(args, store, server)
        rows = server.batches.stats()["batch_rows"]
        assert rows == 4 * len(pids)  # Discovery, Generation, Digestion, Execution (gold) of each problem
        assert _count(store, "SELECT requests FROM batches") == rows
        server.batches.delay = 1.0  # the provider finishes it while the resumed run polls

        summary = _summary(runner.invoke(app, args))
        stats = server.stats()
        assert stats["batches"] == 1 and stats["batch_rows"] == rows  # nothing submitted twice
        assert set(Counter(stats["batch_rows_by_id"]).values()) == {1}
        assert stats["total"] == 0  # and nothing online
        assert summary["failed_jobs"] == [] and summary["batch_rows_submitted"] == 0 and summary["rollouts"] == rows
    assert _count(store, "SELECT state FROM batches") == "completed"

    async def targets() -> Counter[str]:
        async with Store.open(store) as s:
            return Counter(r.target for r in await s.rollouts(student="openai/student", source="prim:release"))
    assert asyncio.run(targets()) == {t: len(pids) for t in (DISCOVERY, GENERATION, DIGESTION, f"{EXECUTION}gold")}
