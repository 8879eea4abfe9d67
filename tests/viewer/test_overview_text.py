"""The HTML report in headless Chromium (issue 43): the overview of a report with no cut-off banner and no
review prints no literal "null" (items 8: `replaceChildren(..., null)`), and after a C1-only probe its
outcome chart names the families C1 fails "Not determined", as every other output does (item 6).

On a copy of tests/data/before-house/before.sqlite (a scripted student at K = 2 on six released
families) with every rollout but C1's deleted."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from oracleladder import Experiment
from oracleladder.ladder.outcomes import NOT_DETERMINED
from tests.viewer.browser import errors, open_page

pytestmark = pytest.mark.browser

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house" / "before.sqlite"
S = "openai/student"


def _c1_only(tmp_path: Path) -> Path:
    store = tmp_path / "s.sqlite"
    shutil.copy(BEFORE, store)
    with sqlite3.connect(store) as con:
        con.execute("DELETE FROM rollouts WHERE target_ref NOT IN (SELECT id FROM names WHERE name = 'C1_direct')")
    return store

# every text node of the page whose text is "null", with its parent's tag
_NULLS = """
const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const out = [];
for (let n = w.nextNode(); n; n = w.nextNode()) if (n.data.trim() === "null") out.push(n.parentNode.tagName);
return out;
"""


@pytest.fixture(scope="module")
def c1_site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("c1-only")

    async def write() -> None:
        async with Experiment(_c1_only(tmp)) as ex:
            await ex.write_report(await ex.report([S]), tmp / "out", html=True)
    asyncio.run(write())
    return tmp / "out" / "html" / "index.html"


def test_the_overview_and_a_family_page_print_no_null(browser, c1_site: Path) -> None:
    open_page(browser, c1_site.as_uri())
    assert browser.find_elements(By.ID, "outcome-chart")
    assert not browser.find_elements(By.ID, "cut-off-banner")  # the case that printed "null" under the title
    assert browser.execute_script(_NULLS) == []
    open_page(browser, c1_site.as_uri() + "#/family/0")
    assert browser.find_elements(By.CSS_SELECTOR, "#main h1")
    assert browser.execute_script(_NULLS) == []
    assert errors(browser) == []


def test_the_outcome_chart_says_not_determined(browser, c1_site: Path) -> None:
    open_page(browser, c1_site.as_uri())
    segs = {s.get_attribute("data-value"): int(s.get_attribute("data-count"))
            for s in browser.find_elements(By.CSS_SELECTOR, f'#outcome-chart .seg[data-student="{S}"]')}
    assert {k: v for k, v in segs.items() if v} == {"Direct": 3, NOT_DETERMINED: 2}
