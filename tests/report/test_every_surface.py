"""One rule, every surface (issue 43): run selection and truncation read the same way by each surface,
on the one constructed store of tests/helpers/surfaces.py (two budgets, answers cut off at the lower,
a C1-only run, a cached rerun).

A cell per (surface, rule); those of the surfaces that read through the rule already (compare, the
audits, panels export) guard it, the others failed before it:

- selection: a surface never pools the runs at --max-tokens 128 and 384; it refuses naming both and the
  option that picks one, reads one when picked, and names them side by side ``S@max_tokens=128`` (at
  most 40 characters: the two ladder runs sent the same version of every template both sent);
- truncation: a surface that shows a rate says how many of its answers were cut off and why an answer
  had nothing to grade, in `audit.format`'s words.

Plus: a bare teacher name that names two granularities is refused, naming both, by probe, report,
export and compare."""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder import Experiment, SyncExperiment
from oracleladder.cli import app
from oracleladder.experiment import Choice, Endpoint, ExperimentError, ProbeEstimate
from oracleladder.schemas import Family, Provenance
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.helpers.surfaces import (
    BENCHMARK,
    FAMILIES,
    HIGH,
    JUDGE,
    LOW,
    STUDENT,
    Surfaces,
    built,
    script,
)

LABELS = [f"{STUDENT}@max_tokens={LOW}", f"{STUDENT}@max_tokens={HIGH}"]
CUT = f"4 of 4 answers cut off at --max-tokens {LOW}; 4 unreadable (4 cut off)"


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Surfaces:
    return built(tmp_path_factory, release_data)


def _cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def _prim_report(s: Surfaces, out: Path, *pick: str, code: int = 0) -> str:
    return _cli("prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out), "--html",
                "--store", str(s.store), *pick, code=code)


# ------------------------------------------------------------------ selection

def prim_report_selection(s: Surfaces, tmp: Path) -> None:
    said = _prim_report(s, tmp / "pooled", code=2)
    assert f"max_tokens={LOW} (K = 1" in said and f"max_tokens={HIGH} (K = 1" in said
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in said and "--by-run" in said
    _prim_report(s, tmp / "low", "--max-tokens", str(LOW))
    low = json.loads((tmp / "low" / "report.json").read_text())
    assert low["table1"]["dimensions"]["generation"]["n"] == 4 and low["table1"]["dimensions"]["discovery"]["n"] == 4
    _prim_report(s, tmp / "high", "--max-tokens", str(HIGH))
    high = json.loads((tmp / "high" / "report.json").read_text())
    assert high["table1"]["dimensions"]["generation"]["n"] == 2  # the two problems probed at 384, not six
    assert high["settings"].startswith(f"K = 1, max_tokens = {HIGH}")
    _prim_report(s, tmp / "side", "--by-run")
    assert sorted(p.name for p in (tmp / "side").iterdir()) == [f"max_tokens={LOW}", f"max_tokens={HIGH}"]


def ladder_report_selection(s: Surfaces, tmp: Path) -> None:
    with SyncExperiment(s.store) as ex:
        with pytest.raises(ExperimentError, match=f"--max-tokens {LOW} or --max-tokens {HIGH}"):
            ex.report([STUDENT])
        side = ex.report([STUDENT], choice=Choice(by_run=True))
    assert list(side.results) == LABELS and all(len(label) <= 40 for label in side.results)


def python_api_selection(s: Surfaces, tmp: Path) -> None:
    with SyncExperiment(s.store) as ex:
        frame = ex.report([STUDENT], choice=Choice(by_run=True)).to_pandas("rollout")
    assert sorted(set(frame["student"])) == LABELS


def export_results_selection(s: Surfaces, tmp: Path) -> None:
    out = tmp / "results.csv"
    _cli("export-results", "--student", STUDENT, "--by-run", "--out", str(out), "--store", str(s.store))
    with out.open(newline="") as f:
        assert sorted({row["student"] for row in csv.DictReader(f)}) == LABELS


def html_selection(s: Surfaces, tmp: Path) -> None:
    _cli("report", "--student", STUDENT, "--by-run", "--html", "--out", str(tmp / "r"), "--store", str(s.store))
    overview = (tmp / "r" / "html" / "data" / "overview.js").read_text()
    data = json.loads(overview[overview.index("(") + 1:overview.rindex(")")])
    assert sorted(data["provenance"]["students"]) == LABELS
    assert sorted(p.name for p in (tmp / "r").glob("*.png")) and all(
        len(label) <= 40 for label in json.loads((tmp / "r" / "report.json").read_text())["students"])


def compare_selection(s: Surfaces, tmp: Path) -> None:
    said = _cli("compare", "--a", "release", "--primitive", "--student", STUDENT, "--out", str(tmp / "c"),
                "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())


def audit_selection(s: Surfaces, tmp: Path) -> None:
    said = _cli("audit", "format", "--student", STUDENT, "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())
    audit = json.loads(_cli("audit", "format", "--student", STUDENT, "--max-tokens", str(LOW), "--json",
                            "--store", str(s.store)))
    assert list(audit["table"]) == ["C1_direct"] and audit["max_tokens"] == [LOW]  # the C1-only run alone


def panels_export_selection(s: Surfaces, tmp: Path) -> None:
    said = _cli("panels", "export", "--student", STUDENT, "--out", str(tmp / "p"), "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())
    _cli("panels", "export", "--student", STUDENT, "--out", str(tmp / "p"), "--max-tokens", str(LOW),
         "--store", str(s.store))
    records = [json.loads(line) for line in next((tmp / "p" / "oracle_panel").iterdir()).read_text().splitlines()]
    assert {(r["condition"], r["n_correct"], r["k"]) for r in records} == {("C1_direct", 0, 1)} and len(records) == 4


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


def _refused_naming_runs(said: str, runs: dict[int, str]) -> None:
    said = " ".join(said.split())
    assert f"max_tokens={LOW} (K = 1, runs {runs[LOW]})" in said and f"max_tokens={HIGH} (K = 1, runs " in said
    # a judge's --max-tokens is its own: the group is picked by its run
    assert f"pick one with --run {runs[LOW]} or --run " in said and "--by-run" not in said


def _judged(*args: str, store: Path, code: int = 0) -> str:
    with LoopbackServer(script=judge_script) as server:
        return _cli(*args, "--judge", JUDGE, "--student", STUDENT, "--base-url", server.openai_base_url,
                    "--store", str(store), code=code)


def prim_score_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    _refused_naming_runs(_judged("prim", "score", store=store, code=2), runs)
    scored = json.loads(_judged("prim", "score", "--run", runs[HIGH], "--json", store=store).splitlines()[-1])
    assert (scored["scored"], scored["unreadable"], scored["correct"]) == (2, 0, {"prim_discovery": 2})
    # the 4 unreadable scores at 128 keep their rows beside the 2 at 384: no score row is shared
    with sqlite3.connect(store) as con:
        rows = con.execute("SELECT score, reason FROM prim_scores WHERE target = 'prim_discovery'").fetchall()
    assert sorted(rows) == [(0.0, "unreadable")] * 4 + [(1.0, "")] * 2
    for budget, (n, rate) in {LOW: (4, 0.0), HIGH: (2, 1.0)}.items():
        _cli("prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(tmp / str(budget)),
             "--max-tokens", str(budget), "--store", str(store))
        discovery = json.loads((tmp / str(budget) / "report.json").read_text())["table1"]["dimensions"]["discovery"]
        assert (discovery["n"], discovery["interval"]["point"]) == (n, rate), (budget, discovery)


def prim_answers_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    _refused_naming_runs(_judged("prim", "answers", store=store, code=2), runs)
    judged = json.loads(_judged("prim", "answers", "--run", runs[LOW], "--json", store=store).splitlines()[-1])
    assert (judged["judged"], judged["correct"], judged["missing"]) == (4, 4, 0)  # the 4 cut-off Generation answers
    with sqlite3.connect(store) as con:
        called = {key for (key,) in con.execute("SELECT rollout_call FROM prim_answer_verdicts")}

    async def made_at_low() -> set[str]:
        async with Store.open(store) as st:
            return {r.call_key for r in await st.rollouts(student=STUDENT, target="C1_direct") if r.run_id == runs[LOW]}
    assert called == asyncio.run(made_at_low()) and len(called) == 4


def prim_audit_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    _judged("prim", "score", "--run", runs[HIGH], store=store)
    said = _cli("prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(tmp / "a.csv"),
                "--store", str(store), code=2)
    _refused_naming_runs(said, runs)
    _cli("prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(tmp / "a.csv"), "--run", runs[HIGH],
         "--store", str(store))
    key = json.loads((tmp / "a.csv.key.json").read_text())

    async def made_at_high() -> set[str]:
        async with Store.open(store) as st:
            return {r.call_key for r in await st.rollouts(student=STUDENT, target="prim_discovery")
                    if r.run_id == runs[HIGH]}
    assert {c["rollout_call"] for c in key["cases"].values()} == asyncio.run(made_at_high())


# ------------------------------------------------------------------ truncation

def audit_truncation(s: Surfaces, tmp: Path) -> None:
    said = " ".join(_cli("audit", "format", "--student", STUDENT, "--max-tokens", str(LOW),
                         "--store", str(s.store)).split())
    assert f"warning: {STUDENT}, C1: 4 of 4 rollouts (100.0%) were cut off at --max-tokens {LOW}" in said


def prim_report_truncation(s: Surfaces, tmp: Path) -> None:
    said = _prim_report(s, tmp / "low", "--max-tokens", str(LOW))
    assert f"warning: discovery: {CUT}" in said and f"warning: generation: {CUT}" in said
    md = (tmp / "low" / "report.md").read_text()
    assert f"- **Warning:** discovery: {CUT}" in md and f"- **Warning:** generation: {CUT}" in md
    report = json.loads((tmp / "low" / "report.json").read_text())
    written = [w for d in report["families"].values() for w in d["written"]]
    assert len(written) == 4
    # scored 0 by rule: the judge was never asked, so no verdict of its is shown
    why = "unreadable (cut off): scored 0, the judge was not asked"
    assert all((w["primitive"], w["validity"], w["reason"]) == (None, None, why) for w in written)
    overview = (tmp / "low" / "html" / "data" / "overview.js").read_text()
    assert json.loads(overview[overview.index("(") + 1:overview.rindex(")")])["warnings"] == [
        f"discovery: {CUT}", f"generation: {CUT}"]


def benchmark_truncation(s: Surfaces, tmp: Path) -> None:
    b = s.benchmark
    assert b is not None and b.pass_at_1 == 0.0
    assert b.truncation.said(f"benchmark '{BENCHMARK}'", [b.max_tokens]) == (
        f"benchmark '{BENCHMARK}': 8 of 8 answers cut off at --max-tokens {LOW}; 8 unreadable (8 cut off)")
    assert b.flat()["truncation"] == {"answers": 8, "cut_off": 8, "unreadable": {"cut off": 8, "refused": 0,
                                                                                  "no box": 0}}


def python_api_truncation(s: Surfaces, tmp: Path) -> None:
    with SyncExperiment(s.store) as ex:
        frame = ex.report([STUDENT], choice=Choice(max_tokens=LOW)).to_pandas("rollout")
    assert len(frame) == 4
    assert (list(set(frame["finish_reason"])), list(set(frame["truncated"])), list(set(frame["unreadable"]))) == (
        ["length"], [True], ["cut off"])


def export_results_truncation(s: Surfaces, tmp: Path) -> None:
    out = tmp / "rollouts.csv"
    _cli("export-results", "--student", STUDENT, "--per", "rollout", "--max-tokens", str(HIGH), "--out", str(out),
         "--store", str(s.store))
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {(r["finish_reason"], r["truncated"], r["unreadable"]) for r in rows} == {("stop", "False", "")}


CELLS: dict[tuple[str, str], Callable[[Surfaces, Path], None]] = {
    ("prim report", "selection"): prim_report_selection,
    ("prim score", "selection"): prim_score_selection,
    ("prim answers", "selection"): prim_answers_selection,
    ("prim audit", "selection"): prim_audit_selection,
    ("ladder report", "selection"): ladder_report_selection,
    ("python api", "selection"): python_api_selection,
    ("export-results", "selection"): export_results_selection,
    ("html", "selection"): html_selection,
    ("compare", "selection"): compare_selection,
    ("audits", "selection"): audit_selection,
    ("panels export", "selection"): panels_export_selection,
    ("audits", "truncation"): audit_truncation,
    ("prim report", "truncation"): prim_report_truncation,
    ("benchmark", "truncation"): benchmark_truncation,
    ("python api", "truncation"): python_api_truncation,
    ("export-results", "truncation"): export_results_truncation,
}


@pytest.mark.parametrize(("surface", "rule"), list(CELLS))
def test_every_surface_reads_the_rule(surface: str, rule: str, surfaces: Surfaces, tmp_path: Path) -> None:
    CELLS[(surface, rule)](surfaces, tmp_path)


# ------------------------------------------------------------------ a bare teacher name

TEACHER = "openai/teacher"


def test_a_bare_teacher_name_of_two_granularities_is_refused_naming_both(surfaces: Surfaces, tmp_path: Path) -> None:
    """One pool compiled by one teacher at the default and at --granularity fine: `--source TEACHER` is two
    sets, refused (exit 2) by probe, report, export and compare, each naming TEACHER@default and TEACHER@fine;
    TEACHER@fine reads the one."""
    store = tmp_path / "two.sqlite"
    shutil.copy(surfaces.store, store)

    async def compile_twice() -> None:
        async with Store.open(store) as s:
            for granularity in ("default", "fine"):
                for pid in FAMILIES:
                    f = Family.model_validate(surfaces.families[pid])
                    await s.put_family(f.model_copy(update={"provenance": Provenance(
                        source=TEACHER, granularity=granularity, teacher_prompt="toolkit")}))
    asyncio.run(compile_twice())
    named = f"'{TEACHER}' names 2 roadmap sets, {TEACHER}@default, {TEACHER}@fine, which are never pooled"
    at = ["--store", str(store)]
    for args in (["probe", "--student", STUDENT, "--source", TEACHER, "--dry-run", "--base-url", "http://127.0.0.1:9/v1"],
                 ["report", "--student", STUDENT, "--source", TEACHER, "--out", str(tmp_path / "r")],
                 ["export", "--out", str(tmp_path / "out.jsonl"), "--teacher", TEACHER],
                 ["compare", "--a", TEACHER, "--b", "release", "--student", STUDENT, "--out", str(tmp_path / "c")]):
        said = _cli(*args, *at, code=2)
        assert named in " ".join(said.split()), (args, said)
    _cli("export", "--out", str(tmp_path / "fine.jsonl"), "--teacher", f"{TEACHER}@fine", *at)
    assert len((tmp_path / "fine.jsonl").read_text().splitlines()) == 4


# ------------------------------------------------------------------ PRIM's probe: the student's own primitive

def test_a_prim_probe_shows_no_primitive_the_student_wrote_at_another_budget(surfaces: Surfaces,
                                                                          tmp_path: Path) -> None:
    """Execution under the student's own primitive (self) shows what its Discovery wrote at the probe's
    settings: the first two primitives written whole at 384 are shown at 384, and none at 128 (there every
    Discovery answer was cut off)."""
    store = tmp_path / "self.sqlite"
    shutil.copy(surfaces.store, store)

    async def probe() -> tuple[ProbeEstimate, ProbeEstimate]:
        async with LoopbackServer(script=script(surfaces.families), cut_at_budget=True) as server:
            student = Endpoint(STUDENT, base_urls=[server.openai_base_url])
            async with Experiment(store) as ex:
                await ex.prim_probe(student, dimensions=("discovery",), max_tokens=HIGH, limit=2)
                return tuple([await ex.prim_probe(student, dimensions=("execution",), sources=("self",),
                                                  max_tokens=budget, dry_run=True) for budget in (HIGH, LOW)])
    high, low = asyncio.run(probe())
    assert (high.jobs, low.jobs) == (2, 0)
