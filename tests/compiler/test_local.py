"""`ladder compile --teacher local` on three real problems with the real embedded model (SmolLM2-135M
through llama-cpp-python, offline): whatever the small model writes, each problem ends as a stored
valid family or as a stored failed attempt with its reasons, never as a crash; a rerun is served
from the store without a single new model call.

Bounded for 2 cores: 64 tokens per teacher answer, 128 once a cut-off reply is asked again, and 2
attempts. The model runs out of tokens mid-plan (at 256 and 512 too: it never finishes a plan), which
must be recorded as a failure like any other; the smaller budget takes a quarter of the CPU to get there."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import parse_model
from oracleladder.store import Store
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]

# three short released problems (short prompts keep the teacher prompt well inside the 2048-token context)
PIDS = ["3665e4ec-17a1-4813-ac78-59a216ef7d70", "f8a3e468-191f-474b-9353-04d5d1e32347",
        "55e89ebf-3f20-4c95-bc8d-d7db30987784"]


def _problems(release_data: Path, out: Path) -> Path:
    records = {}
    for line in (release_data / "families_sample.jsonl").read_text().splitlines():
        f = json.loads(line)
        if f["pid"] in PIDS:
            text = f["parent_prompt"]
            text = text.split("Problem:\n", 1)[1] if "Problem:\n" in text else text  # the released wrapper
            records[f["pid"]] = {"pid": f["pid"], "problem": text.strip(), "answer": f["parent_answer"].strip()}
    assert set(records) == set(PIDS)
    out.write_text("".join(json.dumps(records[p]) + "\n" for p in PIDS))
    return out


async def _outcomes(store_path: Path, source: str) -> dict[str, tuple[bool, list]]:
    async with Store.open(store_path) as store:
        out = {}
        for pid in PIDS:
            family = await store.get_family(pid, source=source)
            attempts = await store.compile_attempts(pid, source)
            out[pid] = (family is not None, attempts)
        return out


@pytest.mark.timeout(900)
def test_local_teacher_compiles_or_records_why_not(release_data: Path, tmp_path: Path) -> None:
    problems = _problems(release_data, tmp_path / "problems.jsonl")
    store = tmp_path / "local.sqlite"
    args = ["compile", str(problems), "--teacher", "local", "--store", str(store), "--max-tokens", "64",
            "--max-attempts", "2", "--concurrency", "3", "--json"]
    runner = CliRunner()

    first = runner.invoke(app, args)
    summary = json.loads(first.stdout)
    assert first.exit_code == (0 if summary["compiled"] else 1), first.output  # a compile of nothing fails
    assert summary["compiled"] + summary["failed"] == 3
    assert summary["requests"] >= 3 and summary["failures"] == 0

    provider, model = parse_model("local")
    outcomes = asyncio.run(_outcomes(store, f"{provider}/{model}"))
    for pid, (valid, attempts) in outcomes.items():
        assert attempts, f"{pid}: no compile attempt stored"
        last = attempts[-1]
        if valid:
            assert last.passed and last.errors == [], pid
        else:
            assert not last.passed and last.errors, f"{pid}: failed without a stored reason"
            assert all(str(e.get("reason", "")).strip() for e in last.errors), (pid, last.errors)
            for e in last.errors:  # a plan cut off by the budget says which budget, and what to do
                if "IncompleteOutputException" in e["reason"]:
                    # at the budget given, or at twice it once the cut-off reply was asked again
                    assert re.search(r"cut off at --max-tokens (64|128): raise it", e["reason"]), e["reason"]
            assert pid in summary["failed_why"] and summary["failed_why"][pid], pid
        assert [a.attempt for a in attempts] == list(range(len(attempts))) and len(attempts) <= 2
    assert sum(valid for valid, _ in outcomes.values()) == summary["compiled"]

    again = runner.invoke(app, args)
    assert again.exit_code == first.exit_code, again.output
    rerun = json.loads(again.stdout)
    assert rerun["requests"] == 0 and rerun["cache_hits"] == rerun["calls"] > 0  # every call from the store
    assert (rerun["compiled"], rerun["failed"]) == (summary["compiled"], summary["failed"])
    assert rerun["failed_why"] == summary["failed_why"]
