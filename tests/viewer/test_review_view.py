"""The HTML report's taxonomy in two views (Table 42): raw, and with the families the rubric review
flags as grading errors taken out of Composition-gap; in a real headless browser (conftest.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from selenium.webdriver.common.by import By
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas.rubric import RubricLabel
from oracleladder.store import Review, Store
from tests.helpers.composition import STUDENT, composition_gap_store
from tests.viewer.browser import errors, open_page

FLAGGED = "Flagged: grading error"


def _segments(d) -> dict[str, int]:
    return {s.get_attribute("data-value"): int(s.get_attribute("data-count"))
            for s in d.find_elements(By.CSS_SELECTOR, "#taxonomy-chart .seg")}


async def _put(store: Path, labels: dict[str, RubricLabel | None]) -> None:
    async with Store.open(store) as s:
        for pid, label in labels.items():
            await s.put_review(Review(student=STUDENT, source="release", pid=pid, reviewer="openai/r", prompt="p",
                                      label=label))


def _site(store: Path, out: Path) -> str:
    result = CliRunner().invoke(app, ["report", "--student", STUDENT, "--store", str(store), "--out", str(out),
                                      "--html"])
    assert result.exit_code == 0, result.output
    return (out / "html" / "index.html").as_uri()


def test_the_taxonomy_switches_between_raw_and_corrected(browser, tmp_path: Path, release_data: Path) -> None:
    store, fams = composition_gap_store(tmp_path, release_data)
    open_page(browser, _site(store, tmp_path / "before"))
    assert not browser.find_elements(By.ID, "taxonomy-view")  # no review: one view, no switch
    assert _segments(browser) == {"Direct": 1, "Composition-gap": 4}

    evidence = "The reference answer is cut off."
    labels = {fams[0].pid: RubricLabel(category="Verifier_Artifact", verifier_error=True, format_error=False,
                                             evidence=evidence),
                    fams[1].pid: RubricLabel(category="Decomposition_Incomplete", verifier_error=False,
                                             format_error=True, evidence="Two boxes."),
                    fams[2].pid: None,
                    fams[3].pid: RubricLabel(category="Genuine_Composition", verifier_error=False, format_error=False,
                                             evidence="Clean.")}
    asyncio.run(_put(store, labels))
    out = tmp_path / "after"
    open_page(browser, _site(store, out))
    review = json.loads((out / "report.json").read_text())["review"][STUDENT]
    assert (review["gap"], review["flagged"]) == (4, 2)
    assert _segments(browser) == {"Direct": 1, "Composition-gap": 4}  # the raw view first
    browser.find_element(By.CSS_SELECTOR, '#taxonomy-view input[value="corrected"]').click()
    assert _segments(browser) == {"Direct": 1, "Composition-gap": 2, FLAGGED: 2}
    browser.find_element(By.CSS_SELECTOR, f'#taxonomy-chart .seg[data-value="{FLAGGED}"]').click()
    listed = {r.get_attribute("data-pid") for r in browser.find_elements(By.CSS_SELECTOR, "#family-list tbody tr")}
    assert listed == {fams[0].pid, fams[1].pid}
    browser.find_element(By.CSS_SELECTOR, '#taxonomy-view input[value="raw"]').click()
    assert _segments(browser) == {"Direct": 1, "Composition-gap": 4}
    # a family's page says what the review found
    browser.get(browser.current_url.split("#")[0] + "#/family/0")
    page = browser.find_element(By.ID, "main").text
    assert f"Rubric review: Verifier_Artifact, verifier error. {evidence}" in page
    assert errors(browser) == []
