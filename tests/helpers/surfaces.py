"""One constructed store that every surface of issue 43 is read from (tests/report/test_every_surface.py
holds the selection and truncation cells; other modules may add theirs on the same store).

Four released families (tests/data/release_sample, the PRIM tests' A-D) with their gold primitives, and a
scripted student over the loopback server (`cut_at_budget`: an answer longer than --max-tokens ends there,
finish reason "length"). The student's every answer runs ~250 tokens of working before its box (or, asked
for a primitive, before its core_concept line), so at --max-tokens 128 every answer is cut off before it
says anything, and at 384 every answer is whole (and right):

- the ladder at 128: C1 alone, K = 1, no Stage 0: a C1-only student whose answers are all cut off;
- the ladder at 384: every condition and Stage 0, K = 1; then the same probe again: a cached rerun;
- PRIM at 128: Discovery and Generation of the four families (every primitive unreadable, cut off);
  PRIM at 384: Generation of the first two;
- the Discovery primitives at 128 scored by a judge (unreadable: scored 0 with no judge asked);
- a plain benchmark of the four problems at 128, K = 2: every answer cut off, pass@1 0.

A test module builds it once in a module-scoped fixture (``return built(tmp_path_factory, release_data)``);
its cells read it and write only under their own tmp_path, through the readers below (`cli`, `overview`, ...).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.experiment import BenchmarkResult, Choice, Endpoint, ProbeResult
from oracleladder.schemas import Family, Provenance
from oracleladder.store import RunRecord, Store
from oracleladder.testing import LoopbackServer
from tests.helpers.terminal import ladder

STUDENT, JUDGE, TEACHER = "openai/student", "openai/judge", "openai/teacher"
LOW, HIGH = 128, 384  # the two budgets
FAMILIES = ("f8a3e468-191f-474b-9353-04d5d1e32347", "de4b7c19-3f71-44b8-8ee3-7cfeb7bd18f6",
            "5cf6d4d9-ba10-4d66-96f4-ca128db67e84", "85b872e8-a6f6-477b-a4dd-5d36a24ef93a")
WORKING = "Let us work through the problem step by step. " * 22  # ~250 tokens (4 characters a token)
BENCHMARK = "plain"


@dataclass
class Surfaces:
    """The store and what each run said."""

    store: Path
    families: dict[str, dict]  # by pid, as released
    probes: dict[str, ProbeResult] = field(default_factory=dict)  # ladder_low, ladder_high, rerun
    benchmark: BenchmarkResult | None = None


def script(families: dict[str, dict]):
    """The student's answers (the loopback server's script): ~250 tokens of working, then the box or the primitive."""
    def answer(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
        user = messages[-1]["content"]
        if "DO NOT SOLVE OR SUMMARIZE" in user:  # PRIM's Discovery: a primitive, after its working
            return WORKING + "\ncore_concept: the key idea\nessential_property: x\nsolution_principle: y"
        pid = next((pid for pid, f in families.items()
                    if f["parent_prompt"].rsplit("Problem:\n", 1)[-1].strip()[:80] in user), None)
        gold = families[pid]["parent_answer"] if pid is not None else next(
            (m["answer"] for f in families.values() for m in f["milestones"] if m["prompt"][:60] in user), "0")
        return WORKING + f"\nThe answer is \\boxed{{{gold}}}."
    return answer


async def build(tmp_path: Path, release_data: Path) -> Surfaces:
    """The store under ``tmp_path`` (see the module's docstring)."""
    released = {f["pid"]: f for line in (release_data / "families_sample.jsonl").read_text().splitlines()
                if (f := json.loads(line))["pid"] in FAMILIES}
    families = {pid: released[pid] for pid in FAMILIES}
    fams, golds, pool = tmp_path / "families.jsonl", tmp_path / "golds.jsonl", tmp_path / f"{BENCHMARK}.jsonl"
    fams.write_text("".join(json.dumps(f) + "\n" for f in families.values()))
    golds.write_text("".join(line + "\n" for line in (release_data / "prim_gold.jsonl").read_text().splitlines()
                             if json.loads(line)["pid"] in families))
    pool.write_text("".join(json.dumps({"pid": pid, "problem": f["parent_prompt"], "answer": f["parent_answer"]})
                            + "\n" for pid, f in families.items()))
    out = Surfaces(tmp_path / "surfaces.sqlite", families)
    async with LoopbackServer(script=script(families), cut_at_budget=True, max_lifetime=600) as server:
        student = Endpoint(STUDENT, base_urls=[server.openai_base_url])
        async with Experiment(out.store) as ex:
            await ex.import_families(fams)
            await ex.import_primitives(golds)
            out.probes["ladder_low"] = await ex.probe(student, k=1, conditions=["C1"], stage0=False, max_tokens=LOW)
            out.probes["ladder_high"] = await ex.probe(student, k=1, max_tokens=HIGH)
            out.probes["rerun"] = await ex.probe(student, k=1, max_tokens=HIGH)
            await ex.prim_probe(student, dimensions=("discovery", "generation"), max_tokens=LOW)
            await ex.prim_probe(student, dimensions=("generation",), max_tokens=HIGH, limit=2)
            await ex.prim_score(Endpoint(JUDGE, base_urls=[server.openai_base_url]), STUDENT,
                                choice=Choice(max_tokens=LOW))
            out.benchmark = await ex.benchmark(student, pool, k=2, max_tokens=LOW)
    return out


def built(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Surfaces:
    """The store, for a module-scoped fixture (built once per module, in a folder of its own)."""
    return asyncio.run(build(tmp_path_factory.mktemp("surfaces"), release_data))


# ------------------------------------------------------------------ reading the store's surfaces

def cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def overview(site: Path) -> dict:
    return overview_of((site / "data" / "overview.js").read_text(encoding="utf-8"))


def overview_of(script: str) -> dict:
    """The overview a site's data/overview.js carries."""
    return json.loads(script[script.index("(") + 1:script.rindex(")")])


def prim_report(s: Surfaces, out: Path, *pick: str, code: int = 0) -> str:
    return cli("prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out), "--html",
               "--store", str(s.store), *pick, code=code)


def judge_script(messages: list[dict], body: dict) -> str:
    """PRIM's judges (the loopback server's script): every primitive valid and matching the gold one, every
    answer read correct."""
    user = messages[0]["content"]
    if "VACUOUS" in user:
        return '{"verdict": "valid", "failure": "none", "evidence": "a real primitive"}'
    if "## Model Primitive (judge this):" in user:
        return '{"agreement": "match", "evidence": "the same idea"}'
    return '{"extracted_final_answer": "x", "correct": "yes", "reasoning": "it matches"}'


def discovery_at_both(s: Surfaces, tmp: Path) -> tuple[Path, dict[int, str]]:
    """A copy of the store whose Discovery is probed at 384 too (the first two families, written whole); the
    PRIM probe run at each budget, by budget."""
    store = tmp / "both.sqlite"
    shutil.copy(s.store, store)

    async def probe() -> dict[int, str]:
        async with LoopbackServer(script=script(s.families), cut_at_budget=True) as server:
            async with Experiment(store) as ex:
                await ex.prim_probe(Endpoint(STUDENT, base_urls=[server.openai_base_url]), dimensions=("discovery",),
                                    max_tokens=HIGH, limit=2)
                return {r.config["max_tokens"]: r.id for r in await ex.store.runs() if r.kind == "prim-probe"
                        and r.config["dimensions"] != ["generation"]}
    return store, asyncio.run(probe())


def refused_naming_runs(said: str, runs: dict[int, str]) -> None:
    said = " ".join(said.split())
    assert f"max_tokens={LOW} (K = 1, runs {runs[LOW]})" in said and f"max_tokens={HIGH} (K = 1, runs " in said
    # a judge's --max-tokens is its own: the group is picked by its run
    assert f"pick one with --run {runs[LOW]} or --run " in said and "--by-run" not in said


def judged(*args: str, store: Path, code: int = 0) -> str:
    with LoopbackServer(script=judge_script) as server:
        return cli(*args, "--judge", JUDGE, "--student", STUDENT, "--base-url", server.openai_base_url,
                   "--store", str(store), code=code)


def made_by(store: Path, target: str, run_id: str) -> set[str]:
    """The call keys of the student's answers of ``target`` in ``store`` that run ``run_id`` paid for."""
    async def read() -> set[str]:
        async with Store.open(store) as st:
            return {r.call_key for r in await st.rollouts(student=STUDENT, target=target) if r.run_id == run_id}
    return asyncio.run(read())


def exported(s: Surfaces, out: Path) -> str:
    """The student's answers at the lower budget as panel files in ``out``, and what the export said."""
    return " ".join(cli("panels", "export", "--student", STUDENT, "--out", str(out), "--max-tokens", str(LOW),
                        "--store", str(s.store)).split())


def imported(s: Surfaces, tmp: Path) -> tuple[Path, str]:
    """A copy of the store with the student's answers at the lower budget imported as the panel of "panel",
    and what the import said."""
    exported(s, tmp / "p")
    store = tmp / "s.sqlite"
    shutil.copy(s.store, store)
    said = " ".join(cli("panels", "import", *map(str, sorted((tmp / "p").rglob("*.jsonl"))), "--student", "panel",
                        "--max-tokens", str(LOW), "--store", str(store)).split())
    return store, said


def paying_run(s: Surfaces) -> tuple[RunRecord, int]:
    """The run that paid for the answers at the higher budget, and how many answers the cached rerun reused."""
    async def read() -> tuple[RunRecord, int]:
        async with Store.open(s.store) as store:
            runs = {r.id: r for r in await store.runs("probe")}
            return runs[s.probes["ladder_high"].run_id], runs[s.probes["rerun"].run_id].reused
    return asyncio.run(read())


def c1_only(s: Surfaces, tmp: Path, *html: str) -> dict:
    """report.json of the C1-only run (every answer cut off: each family failed C1, no C2 or C3 to read)."""
    cli("report", "--student", STUDENT, "--max-tokens", str(LOW), *html, "--out", str(tmp / "r"), "--store",
        str(s.store))
    return json.loads((tmp / "r" / "report.json").read_text())["students"][STUDENT]


def second_set(s: Surfaces, tmp: Path) -> Path:
    """A copy of the store with the four families compiled again by TEACHER and the C1-only probe at the lower
    budget on that set too (C1 reads no roadmap: its answers come from the cache, all cut off): two roadmap
    sets a comparison of the C1-only student reads."""
    store = tmp / "two_sets.sqlite"
    shutil.copy(s.store, store)

    async def compile_and_probe() -> None:
        async with Store.open(store) as st:
            for f in s.families.values():
                await st.put_family(Family.model_validate(f).model_copy(update={"provenance": Provenance(
                    source=TEACHER, teacher_prompt="toolkit")}))
        async with LoopbackServer(script=script(s.families), cut_at_budget=True) as server:
            async with Experiment(store) as ex:
                await ex.probe(Endpoint(STUDENT, base_urls=[server.openai_base_url]), source=TEACHER, k=1,
                               conditions=["C1"], stage0=False, max_tokens=LOW)
    asyncio.run(compile_and_probe())
    return store


def served_compare(s: Surfaces, tmp: Path) -> dict:
    """The overview `ladder view --a release --b TEACHER` serves of the C1-only student (`second_set`), fetched
    over HTTP from the child process, which Ctrl-C then stops."""
    proc = ladder("view", "--a", "release", "--b", TEACHER, "--student", STUDENT, "--max-tokens", str(LOW), "--port",
                  "0", "--store", str(second_set(s, tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        port = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
        assert port, line
        conn = http.client.HTTPConnection("127.0.0.1", int(port[1]), timeout=60)
        conn.request("GET", "/data/overview.js")
        response = conn.getresponse()
        assert response.status == 200, response.status
        return overview_of(response.read().decode())
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def compared(s: Surfaces, tmp: Path) -> tuple[dict, str]:
    """`ladder compare --html` of the C1-only student on the release's set and TEACHER's (`second_set`) into
    tmp/c: compare.json, and what the command said."""
    said = cli("compare", "--a", "release", "--b", TEACHER, "--student", STUDENT, "--max-tokens", str(LOW), "--html",
               "--out", str(tmp / "c"), "--store", str(second_set(s, tmp)))
    return json.loads((tmp / "c" / "compare.json").read_text()), " ".join(said.split())
