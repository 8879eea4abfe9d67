"""The compare view (`ladder compare --html`, `ladder view` of a comparison) in a real headless browser:
two roadmap sets of the same problems, the same student probed on both, checked against compare.json
and the store."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.models import Milestone, Provenance
from oracleladder.schemas.types import AnswerSchema, MilestoneType
from oracleladder.store import Store
from tests.helpers import REPO
from tests.helpers.terminal import ladder
from tests.viewer.browser import (
    errors as _errors,
    listed as _listed,
    open_page as _open,
    shown_attempts as _shown_attempts,
)
from tests.viewer.stores import A, B, fill, import_families as _import, store_attempts as _store_attempts

TEACHER = "openai/teacher@fine"  # the second roadmap set: a teacher's fine-grained roadmaps of the same problems


async def _put_teacher_set(store: Path, families: list[Family]) -> list[Family]:
    """The same problems compiled again: the roadmap in reverse order, with answer schemas, descriptions and
    the private INTEGRATE step a teacher writes."""
    teacher = [f.model_copy(update={
        "milestones": [m.model_copy(update={"answer_schema": AnswerSchema.EXPR, "description": f"Step {i}: {m.type.value}"})
                       for i, m in enumerate(reversed(f.milestones))],
        "integrate": Milestone(prompt="Combine the steps.", answer=f.parent_answer, type=MilestoneType.INTEGRATE,
                               answer_schema=AnswerSchema.EXPR, description="Combine the milestones into the answer."),
        "provenance": Provenance(source="openai/teacher", granularity="fine")}) for f in families]
    async with Store.open(store) as s:
        for f in teacher:
            await s.put_family(f)
    return teacher


def _compare(store: Path, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["compare", "--a", "release", "--b", TEACHER, "--student", A,
                                    "--store", str(store), "--out", str(out), *extra])


@pytest.fixture(scope="module")
def probed_on_both(tmp_path_factory, release_data: Path) -> tuple[Path, list[Family], list[Family]]:
    """Ten released problems under two roadmap sets, the same student probed on both (right more often under
    the released roadmaps), every answer graded by the real verifier; one failed job and one ungraded
    rollout on each set: the store and the two sets."""
    tmp = tmp_path_factory.mktemp("compare")
    released = list(read_jsonl(release_data / "families_sample.jsonl", Family))[:10]
    store = _import(tmp, released)
    teacher = asyncio.run(_put_teacher_set(store, released))
    fill(store, released, {A: 0.6}, k=2, grade=True)
    fill(store, teacher, {A: 0.3}, k=2, grade=True, source=TEACHER)
    return store, released, teacher


@pytest.fixture(scope="module")
def compare_site(probed_on_both) -> tuple[Path, Path, dict, list[Family], list[Family]]:
    """`probed_on_both`'s store, the folder of `ladder compare --html` over it, its compare.json and the two sets."""
    store, released, teacher = probed_on_both
    out = store.parent / "compare"
    result = _compare(store, out, "--html")
    assert result.exit_code == 0, result.output
    assert (out / "html" / "index.html").is_file()
    return store, out, json.loads((out / "compare.json").read_text()), released, teacher


def _listed_after(d, **picks: str) -> list[str]:
    """The problems listed once the filters are set to ``picks`` (filter key -> option value), the others cleared."""
    d.find_element(By.XPATH, "//button[text()='Clear filters']").click()
    for key, value in picks.items():
        Select(d.find_element(By.ID, f"filter-{key}")).select_by_value(value)
    return _listed(d)


def test_the_compare_overview_shows_the_numbers_of_ladder_compare(browser, compare_site, tmp_path: Path) -> None:
    _, out, data, _, _ = compare_site
    _open(browser, (out / "html" / "index.html").as_uri())
    # the tables of compare.md, cell for cell
    md_rows = [[c.strip() for c in line.strip("|").split("|")] for line in (out / "compare.md").read_text().splitlines()
               if line.startswith("|") and not line.startswith("|---")]
    shown = [[c.text.strip() for c in row.find_elements(By.CSS_SELECTOR, "th, td")]
             for row in browser.find_elements(By.CSS_SELECTOR, "#tables tr")]
    assert shown == md_rows and len(shown) > 20
    # the list of problems and its filters count what compare.json counts
    n = data["n"]
    assert n == 10 and browser.find_element(By.ID, "family-count").text == f"{n} of {n} problems"
    assert _listed(browser) == data["pids"]
    for mode, key in (("strict", "gap"), ("fraction", "gap_fraction")):
        assert len(_listed_after(browser, change=key)) == n - data["five_way"][mode]["same"]
    counts = data["five_way"]["strict"]["transitions"]["counts"]
    for row in data["five_way"]["rows"]:
        assert len(_listed_after(browser, gap_a=row["a"], gap_b=row["b"])) == counts[row["a"]][row["b"]] == row["strict"]
    for cond, column in (("C2", 6), ("C3", 7)):  # the columns of its "A / B" tallies
        ag, listed = data["agreement"][cond], []
        for side, other in ((0, 1), (1, 0)):
            listed += _listed_after(browser, change=f"{cond.lower()}-{'ab'[side]}")
            for cell in browser.find_elements(By.CSS_SELECTOR, f"#family-list tbody td:nth-child({column})"):
                tallies = cell.text.split(" / ")
                assert not tallies[side].startswith("0 of") and tallies[other].startswith("0 of")
        assert len(listed) == ag["disagree"]
        assert len(_listed_after(browser)) - len(listed) == ag["same"]
    assert _listed_after(browser, change="c2-a")  # the store was made so that some are
    browser.find_element(By.XPATH, "//button[text()='Clear filters']").click()
    browser.find_element(By.ID, "search").send_keys(data["pids"][3][:8])
    assert _listed(browser) == [data["pids"][3]]
    browser.save_screenshot(str(tmp_path / "compare-overview.png"))
    assert _errors(browser) == []


def test_a_compare_page_shows_both_roadmaps_and_both_outcomes(browser, compare_site, tmp_path: Path) -> None:
    store, out, data, released, teacher = compare_site
    con = sqlite3.connect(store)
    failed_pid = next(p for (p,) in con.execute("SELECT pid FROM failed_jobs WHERE source = ?", (TEACHER,)))
    con.close()
    n = data["pids"].index(failed_pid)
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{n}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.side"))
    assert failed_pid in browser.find_element(By.TAG_NAME, "h1").text
    sets = {"a": ("release", released[n]), "b": (TEACHER, teacher[n])}
    for side, (source, fam) in sets.items():
        section = browser.find_element(By.CSS_SELECTOR, f'section.side[data-side="{side}"]')
        assert source in section.find_element(By.TAG_NAME, "h2").text
        rows = section.find_elements(By.CSS_SELECTOR, "table.roadmap tbody tr")
        assert [r.get_attribute("data-type") for r in rows] == \
            [m.type.value for m in fam.milestones] + (["INTEGRATE"] if fam.integrate else [])
        golds = [r.find_element(By.CSS_SELECTOR, ".tex").get_attribute("title") for r in rows]
        assert golds == [m.answer for m in fam.milestones] + ([fam.integrate.answer] if fam.integrate else [])
        private = section.find_elements(By.CSS_SELECTOR, "tr.integrate")
        assert len(private) == (1 if fam.integrate else 0)
        assert all("private" in r.text for r in private)
        column = section.find_element(By.CSS_SELECTOR, f'section.student[data-student="{A}"]')
        assert _shown_attempts(column) == _store_attempts(store, A, failed_pid, source)
        # the outcome row of this roadmap: its C2 tally is the store's
        attempts = _store_attempts(store, A, failed_pid, source)
        c2 = [v for (t, _), v in attempts.items() if t == "C2_descriptions" and v != "call failed"]
        row = browser.find_element(By.CSS_SELECTOR, f'table.outcomes tr[data-side="{side}"]')
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[6] == f"{sum(v.startswith('ACCEPT') for v in c2)} of {len(c2)}"
        assert cells[3] in {"Direct", "Roadmap-Needed", "Answers-Needed", "Unrecovered", "Not determined"}
        row.find_element(By.LINK_TEXT, "attempts").click()  # the link goes to this roadmap's attempts
        assert browser.switch_to.active_element == section
    assert browser.find_elements(By.CSS_SELECTOR, '.columns.sides section.side[data-side="b"] .failed-call')
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(tmp_path / "compare.png"))  # docs/viewer-compare.png is one of these
    assert _errors(browser) == []


def test_ladder_view_serves_a_comparison(browser, compare_site) -> None:
    store, _, data, _, _ = compare_site
    proc = ladder("view", "--student", A, "--a", "release", "--b", TEACHER, "--store", str(store), "--port", "0",
                  stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        url = re.search(r"serving (http://127\.0\.0\.1:\d+/)", proc.stdout.readline()).group(1)
        _open(browser, url)
        assert _listed(browser) == data["pids"]
        assert _errors(browser) == []
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_a_comparison_in_ladder_view_takes_one_student(probed_on_both) -> None:
    result = CliRunner().invoke(app, ["view", "--student", A, "--student", B, "--a", "release", "--b", TEACHER,
                                      "--store", str(probed_on_both[0])])
    assert result.exit_code == 2 and "a comparison takes --a, --b and one --student" in result.output
