"""A long word does not freeze the HTML report (issue 49): text is laid out in time linear in its length.
`overflow-wrap: anywhere` made every character a break opportunity that the browser's min-content sizing
of the page's grids weighs, quadratic in a word's length: 100 KB of unbroken text froze the tab 18.5 s,
a 100 KB PRIM field 32 s per problem page, and 1 MB never loaded. The viewer folds every word longer than
64 characters with a break opportunity (<wbr>) every 64, which keeps layout linear (1 MB: 1.6-2.1 s in
headless Chromium; the speed itself is not asserted, it belongs to a quiet machine). Checked in headless
Chromium: the page is laid out, the whole text is there, no run between break opportunities is longer
than the fold, and it wraps inside its column (the page does not scroll sideways)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.prim import PrimPrimitive
from oracleladder.store import Store
from oracleladder.validators import reference_answer_problem
from tests.prim.scripted import JUDGE, STUDENT, TEACHER, B, scripted_store
from tests.viewer.browser import errors as _errors, open_page as _open
from tests.viewer.stores import fill
from tests.viewer.test_viewer import A, _answer, _import, _numbers, _report

# unbroken words, repeated to the length wanted: letters from two fonts, as in a formula written without
# spaces (one font's letters alone are laid out fast in any case); the more font changes, the slower
WORD = "abcdefghijklmnoα"  # a megabyte of it: over 2 minutes before (1.6-2.1 s now)
DENSE = "aα" * 8  # 100 KB of it: 6.4 s before on a PRIM page (1.6-2.5 s now)
FOLD = 64  # app.js's FOLD: the longest run of characters between two break opportunities


def _laid_out(d, selector: str) -> tuple[int, int]:
    """Once ``selector``'s box is laid out (its height read forces the layout): the length of its text,
    and the longest run of its characters with no break opportunity (a text node ends at each <wbr>)."""
    WebDriverWait(d, 600).until(lambda d: d.execute_script(
        "const n = document.querySelector(arguments[0]); return n && n.hasChildNodes() && n.offsetHeight > 0", selector))
    return d.execute_script("""
        const box = document.querySelector(arguments[0]);
        const walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        let longest = 0;
        for (let n = walk.nextNode(); n; n = walk.nextNode())
          for (const word of n.data.split(/\\s+/)) longest = Math.max(longest, word.length);
        return [box.textContent.length, longest];""", selector)


def _no_sideways_scroll(d) -> None:
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_family_page_with_a_megabyte_answer_of_one_word_folds_it(browser, tmp_path: Path,
                                                                               release_data: Path) -> None:
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if reference_answer_problem(f) is None][:2]
    long = WORD * (1_000_000 // len(WORD))
    families[0] = families[0].model_copy(update={"parent_prompt": "Find x: " + WORD * (100_000 // len(WORD))})
    store = _import(tmp_path, families)
    fill(store, families, {A: 0.5}, k=1, grade=False)
    pid = families[0].pid
    asyncio.run(_answer(store, A, pid, "C1_direct", 0, long, families[0].parent_answer))
    out = tmp_path / "report"
    _report(store, out, [A])
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{_numbers(out)[pid]}")
    shown, longest = _laid_out(browser, ".problem-box")
    assert shown >= 100_000 and longest <= FOLD
    block = '.target-block[data-target="C1_direct"]'
    browser.find_element(By.CSS_SELECTOR, f"{block} .attempt summary").click()
    shown, longest = _laid_out(browser, f"{block} .response")
    assert shown >= len(long) and longest <= FOLD  # all of it, as text, folded
    _no_sideways_scroll(browser)
    assert _errors(browser) == []


async def _long_primitive(store: Path, text: str) -> None:
    """The teacher's primitive of B made of one long word."""
    async with Store.open(store) as s:
        await s.put_primitive(PrimPrimitive(pid=B, core_concept=text, provenance="teacher-problem-only", author=TEACHER))


@pytest.fixture(scope="module")
def prim_store(tmp_path_factory, release_data: Path) -> Path:
    return scripted_store(tmp_path_factory.mktemp("prim-long"), release_data).store


def test_a_prim_problem_page_with_a_100_kb_field_folds_it(browser, prim_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    shutil.copy(prim_store, store)
    long = DENSE * (100_000 // len(DENSE))
    asyncio.run(_long_primitive(store, long))
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["prim", "report", "--student", STUDENT, "--judge", JUDGE, "--out", str(out),
                                      "--html", "--store", str(store)])
    assert result.exit_code == 0, result.output
    numbers = _numbers(out)
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{numbers[B]}")
    shown, longest = _laid_out(browser, "section.primitive[data-provenance^='teacher']")
    assert shown >= len(long) and longest <= FOLD
    _no_sideways_scroll(browser)
    assert _errors(browser) == []
