"""One rule, every surface (issue 43): run selection, provenance, truncation and the outcome vocabulary
read the same way by each surface, on the one constructed store of tests/helpers/surfaces.py (two budgets,
answers cut off at the lower, a C1-only run, a cached rerun).

A cell per (surface, rule); those of the surfaces that read through the rule already (compare's selection, the
audits, panels export's selection) guard it, the others failed before it:

- selection: a surface never pools the runs at --max-tokens 128 and 384; it refuses naming both and the
  option that picks one, reads one when picked, and names them side by side ``S@max_tokens=128`` (at
  most 40 characters: the two ladder runs sent the same version of every template both sent);
- provenance: the answers at 384 keep the run that paid for them; the cached rerun is listed and counted
  as reusing them, `--run` of the paying run reads them, and its tokens are what the report says they cost;
- truncation: a surface that shows a rate says how many of its answers were cut off and why an answer
  had nothing to grade, in `Truncation.said`'s words (an imported panel's report as its records said);
- outcome vocabulary: a family the C1-only run failed is "Not determined" (no C2 or C3 to read), never
  Unrecovered, in the summary, the DataFrames, report.json, report.md, the HTML and the exported table;
  compare's Table 34 labels it "Not classified" (no five-way label to know), never Capability-gap.

`ladder view` serves the site `ladder compare --html` and `ladder report --html` write (the same
writers): its cell reads the served compare page; the HTML cells cover the
report's. `ladder compare` shows no cost, so it has no provenance cell (its --run picks through the report's
selection). The sets' own rules (a bare teacher name, a recompile): test_surface_sets.py."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from oracleladder import SyncExperiment
from oracleladder.experiment import Choice, ExperimentError
from oracleladder.ladder.outcomes import NOT_DETERMINED
from oracleladder.report.palette import NOT_CLASSIFIED
from tests.helpers.surfaces import (
    BENCHMARK,
    HIGH,
    JUDGE,
    LOW,
    STUDENT,
    TEACHER,
    Surfaces,
    built,
    c1_only,
    cli,
    compared,
    discovery_at_both,
    exported,
    imported,
    judged,
    made_by,
    overview,
    paying_run,
    prim_report,
    refused_naming_runs,
    served_compare,
)
from tests.viewer.browser import errors, open_page

LABELS = [f"{STUDENT}@max_tokens={LOW}", f"{STUDENT}@max_tokens={HIGH}"]
CUT = f"4 of 4 answers cut off at --max-tokens {LOW}; 4 unreadable (4 cut off)"


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Surfaces:
    return built(tmp_path_factory, release_data)


# ------------------------------------------------------------------ selection

def prim_report_selection(s: Surfaces, tmp: Path) -> None:
    said = prim_report(s, tmp / "pooled", code=2)
    assert f"max_tokens={LOW} (K = 1" in said and f"max_tokens={HIGH} (K = 1" in said
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in said and "--by-run" in said
    prim_report(s, tmp / "low", "--max-tokens", str(LOW))
    low = json.loads((tmp / "low" / "report.json").read_text())
    assert low["table1"]["dimensions"]["generation"]["n"] == 4 and low["table1"]["dimensions"]["discovery"]["n"] == 4
    prim_report(s, tmp / "high", "--max-tokens", str(HIGH))
    high = json.loads((tmp / "high" / "report.json").read_text())
    assert high["table1"]["dimensions"]["generation"]["n"] == 2  # the two problems probed at 384, not six
    assert high["settings"].startswith(f"K = 1, max_tokens = {HIGH}")
    prim_report(s, tmp / "side", "--by-run")
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
    cli("export-results", "--student", STUDENT, "--by-run", "--out", str(out), "--store", str(s.store))
    with out.open(newline="") as f:
        assert sorted({row["student"] for row in csv.DictReader(f)}) == LABELS


def html_selection(s: Surfaces, tmp: Path) -> None:
    cli("report", "--student", STUDENT, "--by-run", "--html", "--out", str(tmp / "r"), "--store", str(s.store))
    assert sorted(overview(tmp / "r" / "html")["provenance"]["students"]) == LABELS
    assert sorted(p.name for p in (tmp / "r").glob("*.png")) and all(
        len(label) <= 40 for label in json.loads((tmp / "r" / "report.json").read_text())["students"])


def compare_selection(s: Surfaces, tmp: Path) -> None:
    said = cli("compare", "--a", "release", "--primitive", "--student", STUDENT, "--out", str(tmp / "c"),
               "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())


def audit_selection(s: Surfaces, tmp: Path) -> None:
    said = cli("audit", "format", "--student", STUDENT, "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())
    audit = json.loads(cli("audit", "format", "--student", STUDENT, "--max-tokens", str(LOW), "--json",
                           "--store", str(s.store)))
    assert list(audit["table"]) == ["C1_direct"] and audit["max_tokens"] == [LOW]  # the C1-only run alone


def audit_judge_selection(s: Surfaces, tmp: Path) -> None:
    """`audit judge` and `audit review` pick a group by its run (their --max-tokens is the judge's own)."""
    low, high = (s.probes[name].run_id for name in ("ladder_low", "ladder_high"))
    for command, model in (("judge", "--judge"), ("review", "--reviewer")):
        said = " ".join(cli("audit", command, model, JUDGE, "--student", STUDENT, *(
            ["--sheet", str(tmp / "a.csv")] if command == "judge" else []), "--base-url", "http://127.0.0.1:9/v1",
            "--store", str(s.store), code=2).split())
        assert f"pick one with --run {low} or --run {high}" in said, said
        assert "--max-tokens" not in said and "--by-run" not in said, said


def panels_export_selection(s: Surfaces, tmp: Path) -> None:
    said = cli("panels", "export", "--student", STUDENT, "--out", str(tmp / "p"), "--store", str(s.store), code=2)
    assert f"--max-tokens {LOW} or --max-tokens {HIGH}" in " ".join(said.split())
    cli("panels", "export", "--student", STUDENT, "--out", str(tmp / "p"), "--max-tokens", str(LOW),
        "--store", str(s.store))
    records = [json.loads(line) for line in next((tmp / "p" / "oracle_panel").iterdir()).read_text().splitlines()]
    assert {(r["condition"], r["n_correct"], r["k"]) for r in records} == {("C1_direct", 0, 1)} and len(records) == 4


def prim_score_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    refused_naming_runs(judged("prim", "score", store=store, code=2), runs)
    scored = json.loads(judged("prim", "score", "--run", runs[HIGH], "--json", store=store).splitlines()[-1])
    assert (scored["scored"], scored["unreadable"], scored["correct"]) == (2, 0, {"prim_discovery": 2})
    # the 4 unreadable scores at 128 keep their rows beside the 2 at 384: no score row is shared
    with sqlite3.connect(store) as con:
        rows = con.execute("SELECT score, reason FROM prim_scores WHERE target = 'prim_discovery'").fetchall()
    assert sorted(rows) == [(0.0, "unreadable")] * 4 + [(1.0, "")] * 2
    for budget, (n, rate) in {LOW: (4, 0.0), HIGH: (2, 1.0)}.items():
        cli("prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(tmp / str(budget)),
            "--max-tokens", str(budget), "--store", str(store))
        discovery = json.loads((tmp / str(budget) / "report.json").read_text())["table1"]["dimensions"]["discovery"]
        assert (discovery["n"], discovery["interval"]["point"]) == (n, rate), (budget, discovery)


def prim_answers_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    refused_naming_runs(judged("prim", "answers", store=store, code=2), runs)
    said = json.loads(judged("prim", "answers", "--run", runs[LOW], "--json", store=store).splitlines()[-1])
    assert (said["judged"], said["correct"], said["missing"]) == (4, 4, 0)  # the 4 cut-off Generation answers
    with sqlite3.connect(store) as con:
        called = {key for (key,) in con.execute("SELECT rollout_call FROM prim_answer_verdicts")}

    assert called == made_by(store, "C1_direct", runs[LOW]) and len(called) == 4


def prim_audit_selection(s: Surfaces, tmp: Path) -> None:
    store, runs = discovery_at_both(s, tmp)
    judged("prim", "score", "--run", runs[HIGH], store=store)
    said = cli("prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(tmp / "a.csv"),
               "--store", str(store), code=2)
    refused_naming_runs(said, runs)
    cli("prim", "audit", "--judge", JUDGE, "--student", STUDENT, "--sheet", str(tmp / "a.csv"), "--run", runs[HIGH],
        "--store", str(store))
    key = json.loads((tmp / "a.csv.key.json").read_text())

    assert {c["rollout_call"] for c in key["cases"].values()} == made_by(store, "prim_discovery", runs[HIGH])


# ------------------------------------------------------------------ truncation

def audit_truncation(s: Surfaces, tmp: Path) -> None:
    said = " ".join(cli("audit", "format", "--student", STUDENT, "--max-tokens", str(LOW),
                        "--store", str(s.store)).split())
    assert f"warning: {STUDENT}, C1: {CUT}" in said


def ladder_report_truncation(s: Surfaces, tmp: Path) -> None:
    said = " ".join(cli("report", "--student", STUDENT, "--max-tokens", str(LOW), "--out", str(tmp / "r"),
                        "--store", str(s.store)).split())
    assert f"- **Warning:** {STUDENT}, C1: {CUT}\n" in (tmp / "r" / "report.md").read_text()
    assert f"warning: {STUDENT}, C1: {CUT}" in said
    with SyncExperiment(s.store) as ex:
        assert ex.report([STUDENT], choice=Choice(max_tokens=LOW)).warnings == [f"{STUDENT}, C1: {CUT}"]


def html_truncation(s: Surfaces, tmp: Path) -> None:
    cli("report", "--student", STUDENT, "--max-tokens", str(LOW), "--html", "--out", str(tmp / "r"),
        "--store", str(s.store))
    assert overview(tmp / "r" / "html")["warnings"] == [f"{STUDENT}, C1: {CUT}"]


def panels_export_truncation(s: Surfaces, tmp: Path) -> None:
    assert f"warning: {STUDENT}, C1: {CUT}" in exported(s, tmp / "p")
    records = [json.loads(line) for line in next((tmp / "p" / "oracle_panel").iterdir()).read_text().splitlines()]
    assert [(r["cut_off"], r["unreadable"]) for r in records] == [(1, {"cut off": 1})] * 4


def panels_import_truncation(s: Surfaces, tmp: Path) -> None:
    assert f"warning: panel, C1: {CUT}" in imported(s, tmp)[1]


def panel_report_truncation(s: Surfaces, tmp: Path) -> None:
    """The report of an imported panel warns as its import did: no rollout behind its counts, the import
    run's record of what its records said."""
    store, _ = imported(s, tmp)
    said = " ".join(cli("report", "--student", "panel", "--html", "--out", str(tmp / "r"), "--store", str(store)).split())
    assert f"warning: panel, C1: {CUT}" in said
    assert f"- **Warning:** panel, C1: {CUT}\n" in (tmp / "r" / "report.md").read_text()
    assert overview(tmp / "r" / "html")["warnings"] == [f"panel, C1: {CUT}"]
    written = json.loads((tmp / "r" / "report.json").read_text())["students"]["panel"]["panel_truncation"]
    assert written["max_tokens"] == [LOW] and written["by_condition"]["C1_direct"]["cut_off"] == 4
    with SyncExperiment(store) as ex:
        assert ex.report(["panel"]).warnings == [f"panel, C1: {CUT}"]
    out = tmp / "families.csv"
    said = " ".join(cli("export-results", "--student", "panel", "--out", str(out), "--store", str(store)).split())
    assert f"warning: panel, C1: {CUT}" in said


def prim_report_truncation(s: Surfaces, tmp: Path) -> None:
    said = prim_report(s, tmp / "low", "--max-tokens", str(LOW))
    assert f"warning: discovery: {CUT}" in said and f"warning: generation: {CUT}" in said
    md = (tmp / "low" / "report.md").read_text()
    assert f"- **Warning:** discovery: {CUT}" in md and f"- **Warning:** generation: {CUT}" in md
    report = json.loads((tmp / "low" / "report.json").read_text())
    written = [w for d in report["families"].values() for w in d["written"]]
    assert len(written) == 4
    # scored 0 by rule: the judge was never asked, so no verdict of its is shown
    why = "unreadable (cut off): scored 0, the judge was not asked"
    assert all((w["primitive"], w["validity"], w["reason"]) == (None, None, why) for w in written)
    assert overview(tmp / "low" / "html")["warnings"] == [f"discovery: {CUT}", f"generation: {CUT}"]


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
    cli("export-results", "--student", STUDENT, "--per", "rollout", "--max-tokens", str(HIGH), "--out", str(out),
        "--store", str(s.store))
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {(r["finish_reason"], r["truncated"], r["unreadable"]) for r in rows} == {("stop", "False", "")}


def compare_truncation(s: Surfaces, tmp: Path) -> None:
    """Both sides of a comparison of the C1-only student, in the terminal, compare.md, compare.json and the
    HTML banner (`ladder view --a --b` serves this same site: `ladder_view_truncation` reads it served)."""
    result, said = compared(s, tmp)
    warnings = [f"{STUDENT} on {name}, C1: {CUT}" for name in ("release", TEACHER)]
    assert all(f"warning: {w}" in said for w in warnings), said
    md = (tmp / "c" / "compare.md").read_text()
    assert all(f"- **Warning:** {w}\n" in md for w in warnings)
    assert result["warnings"] == warnings and overview(tmp / "c" / "html")["warnings"] == warnings


def ladder_view_truncation(s: Surfaces, tmp: Path) -> None:
    """`ladder view --a --b` serves the site `ladder compare --html` writes (one `write_compare`): the page it
    serves warns as the files do."""
    assert served_compare(s, tmp)["warnings"] == [f"{STUDENT} on {name}, C1: {CUT}" for name in ("release", TEACHER)]


# ------------------------------------------------------------------ provenance


def runs_provenance(s: Surfaces, tmp: Path) -> None:
    paid, reused = paying_run(s)
    assert paid.tokens_in > 0 and paid.reused == 0 and reused > 0
    lines = {line.split("\t")[0]: line for line in cli("runs", "--store", str(s.store)).splitlines()}
    assert "reused" not in lines[paid.id]
    assert lines[s.probes["rerun"].run_id].endswith(f"\treused {reused} answers from earlier runs")


def ladder_report_provenance(s: Surfaces, tmp: Path) -> None:
    paid, reused = paying_run(s)
    cli("report", "--student", STUDENT, "--run", paid.id, "--out", str(tmp / "r"), "--store", str(s.store))
    assert json.loads((tmp / "r" / "report.json").read_text())["students"][STUDENT]["spent"] == {
        "runs": 1, "tokens_in": paid.tokens_in, "tokens_out": paid.tokens_out, "cost_usd": 0.0, "reused": reused,
        "reruns": 1}
    assert (f"- {STUDENT}: made by 1 probe runs: tokens {paid.tokens_in} in / {paid.tokens_out} out, cost $0.0000; "
            f"{reused} answers reused from the cache by 1 later runs") in (tmp / "r" / "report.md").read_text()


def html_provenance(s: Surfaces, tmp: Path) -> None:
    paid, reused = paying_run(s)
    cli("report", "--student", STUDENT, "--run", paid.id, "--html", "--out", str(tmp / "r"), "--store", str(s.store))
    prov = overview(tmp / "r" / "html")["provenance"]["students"][STUDENT]
    assert (prov["runs"], prov["tokens_in"], prov["tokens_out"], prov["reused"], prov["reruns"]) == (
        1, paid.tokens_in, paid.tokens_out, reused, 1)


def python_api_provenance(s: Surfaces, tmp: Path) -> None:
    paid, _ = paying_run(s)
    with SyncExperiment(s.store) as ex:
        frame = ex.report([STUDENT], choice=Choice(run=paid.id)).to_pandas("rollout")
    assert set(frame["run_id"]) == {paid.id}


def export_results_provenance(s: Surfaces, tmp: Path) -> None:
    paid, _ = paying_run(s)
    out = tmp / "rollouts.csv"
    cli("export-results", "--student", STUDENT, "--per", "rollout", "--run", paid.id, "--out", str(out),
        "--store", str(s.store))
    with out.open(newline="") as f:
        assert {row["run_id"] for row in csv.DictReader(f)} == {paid.id}


# ------------------------------------------------------------------ outcome vocabulary: the C1-only run


def python_api_outcome(s: Surfaces, tmp: Path) -> None:
    with SyncExperiment(s.store) as ex:
        report = ex.report([STUDENT], choice=Choice(max_tokens=LOW))
    summary = report.summary(STUDENT)
    assert (summary["outcomes"][NOT_DETERMINED], summary["outcomes"]["Unrecovered"]) == (4, 0)
    assert summary["outcome_undetermined"] == 4 and summary["outcomes_known"]["Unrecovered"] == 0
    frame = report.to_pandas()
    assert list(frame["outcome"]) == [NOT_DETERMINED] * 4 and frame["outcome_known"].isna().all()


def ladder_report_outcome(s: Surfaces, tmp: Path) -> None:
    written = c1_only(s, tmp)
    assert written["outcomes"][NOT_DETERMINED] == 4 and written["outcomes"]["Unrecovered"] == 0
    assert [r["outcome"] for r in written["families"]] == [NOT_DETERMINED] * 4
    md = (tmp / "r" / "report.md").read_text()
    table9 = md[md.index("## Threshold sweep"):md.index("## ", md.index("## Threshold sweep") + 3)]
    assert "Unrecovered | Not determined |" in table9 and "| 1 (default) | 0 | not run | 0 | 0 | 0 | 4 |" in table9


def html_outcome(s: Surfaces, tmp: Path) -> None:
    c1_only(s, tmp, "--html")
    html = overview(tmp / "r" / "html")
    chart = html["report"]["students"][STUDENT]
    assert (chart["outcome_undetermined"], chart["outcomes_known"]["Unrecovered"]) == (4, 0)
    assert [f["labels"][STUDENT]["outcome"] for f in html["families"]] == [NOT_DETERMINED] * 4


def export_results_outcome(s: Surfaces, tmp: Path) -> None:
    out = tmp / "families.csv"
    cli("export-results", "--student", STUDENT, "--max-tokens", str(LOW), "--out", str(out), "--store", str(s.store))
    with out.open(newline="") as f:
        assert [row["outcome"] for row in csv.DictReader(f)] == [NOT_DETERMINED] * 4


def compare_outcome(s: Surfaces, tmp: Path) -> None:
    """A family the C1-only student failed on both sets has no five-way label (no C2, C3 or Stage 0 to read),
    never Capability-gap: Table 34 in compare.json and compare.md; the HTML's problems "Not determined"."""
    result, _ = compared(s, tmp)
    assert [(r["a"], r["b"], r["strict"], r["fraction"]) for r in result["five_way"]["rows"]] == [
        (NOT_CLASSIFIED, NOT_CLASSIFIED, 4, 4)]
    assert f"| {NOT_CLASSIFIED} | {NOT_CLASSIFIED} | 4 | 4 |" in (tmp / "c" / "compare.md").read_text()
    html = overview(tmp / "c" / "html")
    assert [side["labels"]["outcome"] for f in html["families"] for side in f["sides"]] == [NOT_DETERMINED] * 8
    assert [side["labels"]["gap"] for f in html["families"] for side in f["sides"]] == [NOT_CLASSIFIED] * 8


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
    ("audit judge and review", "selection"): audit_judge_selection,
    ("panels export", "selection"): panels_export_selection,
    ("audits", "truncation"): audit_truncation,
    ("ladder report", "truncation"): ladder_report_truncation,
    ("html", "truncation"): html_truncation,
    ("panels export", "truncation"): panels_export_truncation,
    ("panels import", "truncation"): panels_import_truncation,
    ("report of an imported panel", "truncation"): panel_report_truncation,
    ("prim report", "truncation"): prim_report_truncation,
    ("benchmark", "truncation"): benchmark_truncation,
    ("python api", "truncation"): python_api_truncation,
    ("export-results", "truncation"): export_results_truncation,
    ("compare", "truncation"): compare_truncation,
    ("ladder view --a --b", "truncation"): ladder_view_truncation,
    ("runs", "provenance"): runs_provenance,
    ("ladder report", "provenance"): ladder_report_provenance,
    ("html", "provenance"): html_provenance,
    ("python api", "provenance"): python_api_provenance,
    ("export-results", "provenance"): export_results_provenance,
    ("python api", "outcome"): python_api_outcome,
    ("ladder report", "outcome"): ladder_report_outcome,
    ("html", "outcome"): html_outcome,
    ("export-results", "outcome"): export_results_outcome,
    ("compare", "outcome"): compare_outcome,
}


@pytest.mark.parametrize(("surface", "rule"), list(CELLS))
def test_every_surface_reads_the_rule(surface: str, rule: str, surfaces: Surfaces, tmp_path: Path) -> None:
    CELLS[(surface, rule)](surfaces, tmp_path)


def test_the_compare_page_lists_its_cut_off_warnings_first(browser, surfaces: Surfaces, tmp_path: Path) -> None:
    """The compare overview in headless Chromium: the banner lists compare.md's warnings, above its tables."""
    result, _ = compared(surfaces, tmp_path)
    open_page(browser, (tmp_path / "c" / "html" / "index.html").as_uri())
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "family-list"))
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#cut-off-banner li")] == result["warnings"]
    main = browser.find_element(By.ID, "main").get_attribute("innerHTML")
    assert main.index("cut-off-banner") < main.index('id="tables"') and not errors(browser)
