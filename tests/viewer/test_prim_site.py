"""PRIM's HTML report (`ladder prim report --html`) and its figures, from the store of the scripted PRIM
run (tests/prim/scripted.py: four families, a scripted student and judge): the data the site carries
equals report.json, and in headless Chromium the overview's panels and a problem's page show it; a hostile primitive or student output is shown as text, never run."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.experiment import Experiment, ExperimentError
from oracleladder.prim.probe import DIGESTION
from oracleladder.schemas.prim import PrimPrimitive, read_labelled
from oracleladder.store import Store
from tests.prim.scripted import JUDGE, NAMES, STUDENT, TEACHER, A, D, scripted_store
from tests.viewer.browser import errors as _errors, open_page as _open

# one line per field, as a student writes a primitive; the teacher's primitive has the same payloads
HOSTILE = ('<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2"> '
           '[click me](javascript:window.pwned=3) <a href="#" onclick="window.pwned = 5">link</a>')


def _data(path: Path) -> list:
    """The arguments a data script hands to the page (ladderOverview(...) / ladderFamily(n, ...))."""
    text = path.read_text(encoding="utf-8")
    return json.loads("[" + text[text.index("(") + 1:text.rindex(")")] + "]")


async def _hostile(store: Path) -> None:
    """D's Digestion written with the payloads (its score kept), and a teacher's primitive of A made of them."""
    async with Store.open(store) as s:
        r = next(r for r in await s.rollouts(student=STUDENT, pid=D, target=DIGESTION))
        text = f"essential_property: {HOSTILE}\nsolution_principle: plain\ncore_concept: GOOD-D-DIG {HOSTILE}"
        verdict = dataclasses.replace(r.verdict, extracted=json.dumps(read_labelled(text)))  # as it is graded
        await s.put_rollout(r.model_copy(update={"response": text, "verdict": verdict}))
        await s.put_primitive(PrimPrimitive(pid=A, core_concept=HOSTILE, provenance="teacher-problem-only",
                                            author=TEACHER))


@pytest.fixture(scope="module")
def prim_site(tmp_path_factory, release_data: Path) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("prim-site")
    store = scripted_store(tmp, release_data).store
    asyncio.run(_hostile(store))
    out = tmp / "report"
    result = CliRunner().invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                      "--html", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert f"and {out / 'html' / 'index.html'}" in result.output
    return out, json.loads((out / "report.json").read_text())


def test_the_prim_site_carries_report_json_and_a_page_per_problem(prim_site) -> None:
    out, report = prim_site

    async def responses() -> dict[tuple[str, str, int], str]:
        async with Store.open(out.parent / "s.sqlite") as s:
            return {(r.pid, r.target, r.k): r.response for r in await s.rollouts(student=STUDENT)}
    stored = asyncio.run(responses())
    [overview] = _data(out / "html" / "data" / "overview.js")
    details = report["families"]
    assert overview["prim"] == {k: v for k, v in report.items() if k != "families"}  # every table, as report.json has it
    assert overview["students"] == [STUDENT] and "<th>Dig. − Disc.</th>" in overview["tables_html"]
    places = report["side_by_side"]["families"]
    assert {f["pid"]: (f["prim"], f["ladder_gap"]) for f in overview["families"]} == {
        pid: (p["prim"], p["ladder_gap"]) for pid, p in places.items()}
    assert {NAMES[f["pid"]]: f["prim"] for f in overview["families"]} == {
        "A": "solved", "B": "execution-limited", "C": "discovery-limited", "D": "capability-limited"}
    for f in overview["families"]:
        n, page = _data(out / "html" / "data" / "f" / f"{f['n']}.js")
        assert n == f["n"] and page["pid"] == f["pid"]
        # the report's details, and each written primitive's whole output
        outputs = [w.pop("response") for w in page["written"]]
        assert {k: page[k] for k in ("family", "primitives", "written")} == details[f["pid"]]
        assert outputs == [stored[(f["pid"], w["target"], w["k"])] for w in page["written"]]
    d = next(_data(out / "html" / "data" / "f" / f"{f['n']}.js")[1] for f in overview["families"] if f["pid"] == D)
    dig = next(w for w in d["written"] if w["target"] == DIGESTION)
    assert dig["primitive"]["core_concept"] == f"GOOD-D-DIG {HOSTILE}" and dig["score"] == 1.0
    # a data file's text never closes its script tag early, whatever the student wrote
    n = next(f["n"] for f in overview["families"] if f["pid"] == D)
    text = (out / "html" / "data" / "f" / f"{n}.js").read_text()
    assert "<script>" in text and "</script>" not in text


def test_the_html_report_needs_a_folder(prim_site) -> None:
    out, _ = prim_site

    async def report() -> None:
        async with Experiment(out.parent / "s.sqlite") as ex:
            await ex.prim_report(STUDENT, JUDGE, html=True)
    with pytest.raises(ExperimentError, match="needs a folder"):
        asyncio.run(report())


def test_the_prim_overview_and_a_problem_page_render_and_hostile_text_stays_text(browser, prim_site) -> None:  # noqa: F811
    out, report = prim_site
    [overview] = _data(out / "html" / "data" / "overview.js")
    _open(browser, (out / "html" / "index.html").as_uri())
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "figure2"))

    def counts(panel: str) -> dict[str, int]:
        return {s.get_attribute("data-value"): int(s.get_attribute("data-count"))
                for s in browser.find_elements(By.CSS_SELECTOR, f"#{panel} .seg")}
    assert counts("figure2") == {k: v for k, v in report["figure2"].items() if v}
    assert counts("figure4") == {k: v for k, v in report["table9"].items() if v}
    assert len(browser.find_elements(By.CSS_SELECTOR, "#figure3 .dot")) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "#figure12 .box")) == sum(
        1 for split in report["figure12"].values() for side in ("right", "wrong") if split[side]["n"])
    rows = browser.find_elements(By.CSS_SELECTOR, "#family-list tbody tr")
    assert {NAMES[r.get_attribute("data-pid")]: (r.find_element(By.CSS_SELECTOR, ".prim-place").text,
                                                 r.find_element(By.CSS_SELECTOR, ".ladder-gap").text) for r in rows} == {
        "A": ("solved", "Direct"), "B": ("execution-limited", "Roadmap-gap"),
        "C": ("discovery-limited", "Milestone-execution-gap"), "D": ("capability-limited", "Capability-gap")}
    assert browser.find_element(By.CSS_SELECTOR, "#tables table")  # the tables of report.md
    # D's Discovery primitive had nothing to read: the banner says so, in report.md's words
    banner = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#cut-off-banner li")]
    assert banner == overview["warnings"] and any(line.startswith("discovery: 0 of 4 answers cut off")
                                                  and line.endswith("1 unreadable (1 no box)") for line in banner)

    for pid in (D, A):  # D: the hostile Digestion; A: the hostile teacher's primitive
        n = next(f["n"] for f in overview["families"] if f["pid"] == pid)
        _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{n}")
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.written"))
        written = {(w.get_attribute("data-target"), w.get_attribute("data-verdict"))
                   for w in browser.find_elements(By.CSS_SELECTOR, "section.written")}
        provenances = {p.get_attribute("data-provenance")
                       for p in browser.find_elements(By.CSS_SELECTOR, "section.primitive")}
        if pid == D:
            # Discovery unreadable (scored 0), Digestion correct; the judge's evidence shown
            assert written == {("prim_discovery", "incorrect"), ("prim_digestion", "correct")}
            dig = browser.find_element(By.CSS_SELECTOR, 'section.written[data-target="prim_digestion"]')
            facts = {tr.find_element(By.TAG_NAME, "th").text: tr.find_element(By.TAG_NAME, "td").text
                     for tr in dig.find_elements(By.CSS_SELECTOR, "table.verdicts tr")}
            assert facts == {"V": "valid", "gate": "match (1)", "mechanism": "match (1)",
                             "Score": "1 (PrimitiveAcc at tau = 0.8: 1)"}
            assert "judge's evidence (gate)\ncompared" in dig.text
            disc = browser.find_element(By.CSS_SELECTOR, 'section.written[data-target="prim_discovery"]')
            assert "No readable primitive" in disc.text and "unreadable" in disc.text
            for section in (disc, dig):  # the student's whole output, laid out when opened
                section.find_element(By.CSS_SELECTOR, "details.output summary").click()
            assert disc.find_element(By.CSS_SELECTOR, ".response").text == "I would look for a pattern in the scores."
            box = dig  # its fields and its opened output
        else:
            assert provenances == {"gold", f"teacher-problem-only ({TEACHER})"}
            box = browser.find_element(By.CSS_SELECTOR, "section.primitive[data-provenance^='teacher']")
        for part in ("<script>window.pwned = 1</script>", '<img src=x onerror="window.pwned = 2">',
                     '<a href="#" onclick="window.pwned = 5">link</a>'):
            assert part in box.text
        assert not box.find_elements(By.CSS_SELECTOR, "script, img, [onerror], [onclick], a[href^='javascript']")
        for link in box.find_elements(By.TAG_NAME, "a"):
            link.click()
    time.sleep(0.5)  # an onerror or a timer the payload might have set gets its chance
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert _errors(browser) == []
