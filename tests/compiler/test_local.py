"""`ladder compile --teacher local` on three real problems with the real embedded model (SmolLM2-135M
through llama-cpp-python, offline), and the whole construction on it (issue 13): `local` as teacher and
anchor on the same three problems (as anchor on their released roadmaps too, since the small teacher may
compile none). Whatever the small model writes, each problem ends as a stored valid family or as a stored
failed attempt with its reasons, never as a crash; a rerun is served from the store without a single new
model call; the pipeline finishes and every problem's fate is stored with its reason.

One module so that pytest-xdist's `--dist loadfile` keeps both tests on one worker: the teacher's compile
(a minute of CPU on 2 cores) runs once, in a module fixture, and each test reads a copy of its store.

Bounded for 2 cores: 64 tokens per teacher answer, 128 once a cut-off reply is asked again, 2 attempts,
K = 1 and 32 tokens per anchor answer. The model runs out of tokens mid-plan (at 256 and 512 too: it never
finishes a plan), which must be recorded as a failure like any other; the smaller budget takes a quarter of
the CPU to get there."""

from __future__ import annotations

import asyncio
import csv
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import parse_model
from oracleladder.store import Store
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]

# three short released problems (short prompts keep the teacher prompt well inside the 2048-token context)
PIDS = ["3665e4ec-17a1-4813-ac78-59a216ef7d70", "f8a3e468-191f-474b-9353-04d5d1e32347",
        "55e89ebf-3f20-4c95-bc8d-d7db30987784"]


def _compile(problems: Path, store: Path) -> list[str]:
    return ["compile", str(problems), "--teacher", "local", "--store", str(store), "--max-tokens", "64",
            "--max-attempts", "2", "--concurrency", "3", "--json"]


@dataclass(frozen=True)
class Compiled:
    problems: Path  # the three problems as JSONL
    store: Path  # the store right after the first compile: each test writes to a copy
    first: Result  # that compile's CLI result


def _records(release_data: Path) -> list[dict]:
    records = [json.loads(line) for line in (release_data / "families_sample.jsonl").read_text().splitlines()]
    return [r for r in records if r["pid"] in PIDS]


def _problem_text(record: dict) -> str:
    text = record["parent_prompt"]
    return (text.split("Problem:\n", 1)[1] if "Problem:\n" in text else text).strip()  # the released wrapper


def _problems(release_data: Path, out: Path) -> Path:
    records = {r["pid"]: {"pid": r["pid"], "problem": _problem_text(r), "answer": r["parent_answer"].strip()}
               for r in _records(release_data)}
    assert set(records) == set(PIDS)
    out.write_text("".join(json.dumps(records[p]) + "\n" for p in PIDS))
    return out


@pytest.fixture(scope="module")
def compiled(release_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    where = tmp_path_factory.mktemp("local_compile")
    problems, store = _problems(release_data, where / "problems.jsonl"), where / "local.sqlite"
    return Compiled(problems, store, CliRunner().invoke(app, _compile(problems, store)))


def _copy(compiled: Compiled, tmp_path: Path) -> Path:
    store = tmp_path / "local.sqlite"
    shutil.copy(compiled.store, store)  # the store closed: its WAL is merged into the file
    return store


async def _outcomes(store_path: Path, source: str) -> dict[str, tuple[bool, list]]:
    async with Store.open(store_path) as store:
        out = {}
        for pid in PIDS:
            family = await store.get_family(pid, source=source)
            attempts = await store.compile_attempts(pid, source)
            out[pid] = (family is not None, attempts)
        return out


@pytest.mark.timeout(900)
def test_local_teacher_compiles_or_records_why_not(compiled: Compiled, tmp_path: Path) -> None:
    store = _copy(compiled, tmp_path)
    args = _compile(compiled.problems, store)
    runner = CliRunner()

    first = compiled.first
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


@pytest.mark.timeout(900)
def test_local_teacher_and_anchor_build_a_set_with_every_fate_stored(release_data: Path, compiled: Compiled,
                                                                     tmp_path: Path) -> None:
    records = _records(release_data)
    pool = tmp_path / "pool.csv"  # a CSV pool with AIME-style names
    with pool.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "problem", "answer"])
        for r in records:
            writer.writerow([r["pid"], _problem_text(r), r["parent_answer"]])
    store = _copy(compiled, tmp_path)  # the teacher's replies to these problems, stored by the module's compile
    runner = CliRunner()
    compiled_csv = runner.invoke(app, _compile(pool, store))
    source = "/".join(parse_model("local"))
    summary = json.loads(compiled_csv.stdout)
    assert summary["requests"] == 0  # the same problems as the JSONL: the same calls, served from the store
    n_compiled = summary["compiled"]
    assert compiled_csv.exit_code == (0 if n_compiled else 1), compiled_csv.output  # a compile of nothing fails
    if n_compiled:
        screened = runner.invoke(app, ["screen", "--anchor", "local", "--source", source, "--k", "1",
                                       "--max-tokens", "32", "--set", "local", "--store", str(store)])
        assert screened.exit_code == 0, screened.output
        where = ["--set", "local"]
    else:  # the small teacher compiled nothing: the funnel still tells every problem's fate
        where = ["--source", source]
    result = runner.invoke(app, ["funnel", *where, "--json", "--store", str(store)])
    assert result.exit_code == 0, result.output
    funnel = json.loads(result.stdout)
    assert funnel["candidates"] == 3 and funnel["final"] + len(funnel["dropped"]) == 3
    assert {d["pid"] for d in funnel["dropped"]} <= set(PIDS)
    assert all(d["stage"] and d["cause"] and d["reason"].strip() for d in funnel["dropped"])

    # the anchor side on the same problems' released roadmaps, whatever the teacher managed
    released = tmp_path / "released.jsonl"
    released.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert runner.invoke(app, ["import", str(released), "--store", str(store)]).exit_code == 0
    screened = runner.invoke(app, ["screen", "--anchor", "local", "--k", "1", "--max-tokens", "32", "--set", "re",
                                   "--json", "--store", str(store)])
    assert screened.exit_code == 0, screened.output
    funnel = json.loads(runner.invoke(app, ["funnel", "--set", "re", "--json", "--store", str(store)]).stdout)
    assert funnel["candidates"] == 3 and funnel["final"] + len(funnel["dropped"]) == 3
    assert all(d["reason"].strip() for d in funnel["dropped"])
