"""The HTML report (`ladder report --html`, `ladder view`) in a real headless browser: Debian's chromium,
driven by Selenium through Debian's chromedriver (no browser download). The pages are checked against
report.json and against the store they were written from."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, Verdict
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.schemas.types import Label
from oracleladder.store import Store
from oracleladder.validators import reference_answer_problem
from oracleladder.verify import verify_inprocess
from tests.helpers import REPO
from tests.helpers.terminal import ladder
from tests.viewer.browser import (
    errors as _errors,
    listed as _listed,
    open_page as _open,
    shown_attempts as _shown_attempts,
)
from tests.viewer.stores import A, B, fill, fill_released, import_families as _import, store_attempts as _store_attempts


def _report(store: Path, out: Path, students: list[str]) -> dict:
    args = ["report", "--store", str(store), "--out", str(out), "--html"]
    result = CliRunner().invoke(app, args + [a for s in students for a in ("--student", s)])
    assert result.exit_code == 0, result.output
    assert (out / "html" / "index.html").is_file()
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def probed(tmp_path_factory, release_data: Path) -> Path:
    """Twelve released families probed by two students, every answer graded by the real verifier; one
    failed job, one ungraded rollout and some truncated answers per student: the store."""
    tmp = tmp_path_factory.mktemp("viewer")
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))[:12]
    store = _import(tmp, families)
    odd = next(f.pid for f in families if reference_answer_problem(f) is None)  # a family the report keeps
    fill(store, families, {A: 0.55, B: 0.3}, k=2, grade=True, odd=odd)
    return store


@pytest.fixture(scope="module")
def site(probed: Path) -> tuple[Path, Path, dict]:
    """The store of `probed`, the folder of its two students' report with its HTML, and its report.json."""
    out = probed.parent / "report"
    return probed, out, _report(probed, out, [A, B])


def _segments(d, chart: str) -> dict[tuple[str, str], int]:
    return {(s.get_attribute("data-student"), s.get_attribute("data-value")): int(s.get_attribute("data-count"))
            for s in d.find_elements(By.CSS_SELECTOR, f"#{chart} .seg")}


def _expected_segments(report: dict, kind: str) -> dict[tuple[str, str], int]:
    out = {}
    for s, r in report["students"].items():
        counts = ({**r["taxonomy"], "Not classified": r["taxonomy_not_classified"]} if kind == "gap"
                  else {**r["outcomes_known"], "Not determined": r["outcome_undetermined"]})
        out.update({(s, k): v for k, v in counts.items() if v})
    return out


def test_the_overview_renders_the_counts_of_its_report_json(browser, site, tmp_path: Path) -> None:
    _, out, report = site
    _open(browser, (out / "html" / "index.html").as_uri())
    assert _segments(browser, "taxonomy-chart") == _expected_segments(report, "gap")
    assert _segments(browser, "outcome-chart") == _expected_segments(report, "outcome")
    n = report["students"][A]["n"]
    assert browser.find_element(By.ID, "family-count").text == f"{n} of {n} families"
    # the tables of report.md, every section of it
    headings = re.findall(r"^## (.+)$", (out / "report.md").read_text(), re.M)
    shown = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#tables h2")]
    assert shown == [h.replace("`", "") for h in headings]
    q = report["meta"]["bh_family"]  # the family the q-values were adjusted over: both students' planned tests
    assert q["students"] == 2 and (f"(q) over the {q['tests']} planned tests of 2 students together"
                                   in browser.find_element(By.ID, "tables").text)
    prov = browser.find_element(By.CSS_SELECTOR, "dl.prov").text
    assert f"Student {A}" in prov and "max tokens 256" in prov and "K = 2 per condition" in prov
    browser.save_screenshot(str(tmp_path / "overview.png"))
    assert _errors(browser) == []


def test_a_click_on_a_segment_lists_exactly_its_families(browser, site) -> None:
    _, out, report = site
    _open(browser, (out / "html" / "index.html").as_uri())
    for chart, kind in (("taxonomy-chart", "gap"), ("outcome-chart", "outcome")):
        listed_per_student: dict[str, list[str]] = {A: [], B: []}
        for (student, value), count in _expected_segments(report, kind).items():
            browser.find_element(
                By.CSS_SELECTOR, f'#{chart} .seg[data-student="{student}"][data-value="{value}"]').click()
            rows = _listed(browser)
            assert len(rows) == count, (student, value)
            column = [report["meta"]["students"].index(student) + 4]  # #, family, problem, then the students
            cells = browser.find_elements(By.CSS_SELECTOR, f"#family-list tbody td:nth-child({column[0]})")
            assert all(c.text.startswith(value) or c.text.endswith(value) for c in cells), (student, value)
            listed_per_student[student] += rows
        for student, pids in listed_per_student.items():  # the segments of a bar part its families
            assert len(pids) == len(set(pids)) == report["students"][student]["n"]
    # the keyboard does it too: a segment takes the focus and Enter lists its families
    (student, value), count = next(iter(_expected_segments(report, "gap").items()))
    browser.find_element(By.ID, "search").send_keys("zzz")
    segment = browser.find_element(By.CSS_SELECTOR, f'#taxonomy-chart .seg[data-student="{student}"][data-value="{value}"]')
    browser.execute_script("arguments[0].focus()", segment)
    segment.send_keys(Keys.ENTER)
    assert len(_listed(browser)) == count
    assert _errors(browser) == []


def _numbers(out: Path) -> dict[str, int]:
    """The families of the report, by pid: their page numbers, from the site's overview data."""
    data = json.loads(re.sub(r"^ladderOverview\((.*)\);\s*$", r"\1",
                             (out / "html" / "data" / "overview.js").read_text(), flags=re.S))
    return {f["pid"]: f["n"] for f in data["families"]}


def test_a_family_page_shows_every_attempt_with_its_verdict(browser, site, tmp_path: Path) -> None:
    store, out, report = site
    numbers = _numbers(out)
    con = sqlite3.connect(store)
    failed_pid = next(p for (p,) in con.execute("SELECT pid FROM failed_jobs") if p in numbers)
    con.close()
    for pid in (failed_pid, list(numbers)[-1]):
        _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{numbers[pid]}")
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
        assert pid in browser.find_element(By.TAG_NAME, "h1").text
        for student in (A, B):
            column = browser.find_element(By.CSS_SELECTOR, f'section.student[data-student="{student}"]')
            assert _shown_attempts(column) == _store_attempts(store, student, pid)
            assert column.find_elements(By.CSS_SELECTOR, ".response .katex")  # the answers' LaTeX is typeset
    browser.save_screenshot(str(tmp_path / "family.png"))
    assert _errors(browser) == []


def test_filters_and_search_narrow_the_list(browser, site) -> None:
    store, out, _ = site
    _open(browser, (out / "html" / "index.html").as_uri())
    con = sqlite3.connect(store)
    failed = {p for (p,) in con.execute("SELECT pid FROM failed_jobs")}
    truncated = {p for (p,) in con.execute("SELECT r.pid FROM rollouts_named r JOIN calls c ON c.key = r.call_key "
                                           "WHERE c.finish_reason = 'length' AND r.label = 'NOT_ACCEPT' "
                                           "AND r.status != 'ungraded'")}
    con.close()
    in_report = set(_numbers(out))
    failed, truncated = failed & in_report, truncated & in_report
    assert failed and truncated
    reason = Select(browser.find_element(By.ID, "filter-reason"))
    reason.select_by_value("call failed")
    assert set(_listed(browser)) == failed
    reason.select_by_value("truncated")
    assert set(_listed(browser)) == truncated
    reason.select_by_value("")
    families = list(read_jsonl(out.parent / "families.jsonl", Family))
    word = "chessboard"
    browser.find_element(By.ID, "search").send_keys(word)
    assert set(_listed(browser)) == {f.pid for f in families if word in f.parent_prompt.lower()} & in_report != set()
    assert _errors(browser) == []


async def _accept_one(store: Path, student: str, pid: str) -> None:
    """A later answer of C1, k = 0, accepted: what a rerun writing into the store looks like."""
    async with Store.open(store) as s:
        r = next(r for r in await s.rollouts(student=student, pid=pid, target="C1_direct") if r.k == 0)
        await s.put_rollout(r.model_copy(update={"response": "\\boxed{1}", "verdict": Verdict(Label.ACCEPT, "equivalent", "1")}))


def test_ladder_view_serves_the_store_as_it_is_and_stops_on_ctrl_c(browser, site, tmp_path: Path) -> None:
    store = tmp_path / "live.sqlite"
    shutil.copy(site[0], store)
    proc = ladder("view", "--student", A, "--student", B, "--store", str(store), "--port", "0",
                  stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        url = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line).group(1)
        _open(browser, url)
        assert _segments(browser, "taxonomy-chart") == _expected_segments(site[2], "gap")
        with urllib.request.urlopen(url + "data/f/0.js") as r:
            assert r.read().startswith(b"ladderFamily(0, ")
        # the store changes under the server: the next page load shows it, as a new report would
        unsolved = next(c for c in browser.find_elements(By.CSS_SELECTOR, f'#outcome-chart .seg[data-student="{A}"]')
                        if c.get_attribute("data-value") != "Direct")
        unsolved.click()
        asyncio.run(_accept_one(store, A, _listed(browser)[0]))
        fresh = _report(store, tmp_path / "fresh", [A, B])
        assert fresh["students"][A]["outcomes"] != site[2]["students"][A]["outcomes"]
        _open(browser, url)
        assert _segments(browser, "outcome-chart") == _expected_segments(fresh, "outcome")
        assert _errors(browser) == []
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_first_paint_of_a_354_family_six_student_report(browser, tmp_path: Path, release_data: Path) -> None:
    released = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if reference_answer_problem(f) is None]
    families = [f.model_copy(update={"pid": f"{f.pid}-{i}"}) for i in range(8) for f in released][:354]
    store = _import(tmp_path, families)
    students = {f"openai/student-{i}": 0.15 * i for i in range(6)}
    last = "openai/student-0"  # never right: probed on fewer families, 10 of them without Stage 0 (no label)
    fill(store, families, {s: p for s, p in students.items() if s != last}, k=2, grade=False)
    fill(store, families[:290], {last: 0.0}, k=2, grade=False)
    fill(store, families[290:300], {last: 0.0}, k=2, grade=False, stage0=False)
    report = _report(store, tmp_path / "report", list(students))
    _open(browser, (tmp_path / "report" / "html" / "index.html").as_uri())
    # the paint entries are recorded when the browser gets to them: wait for both, then read them
    paint = WebDriverWait(browser, 30).until(lambda b: b.execute_script(
        "const f = performance.getEntriesByName('first-contentful-paint')[0],"
        " o = performance.getEntriesByName('ladder-overview')[0];"
        " return f && o ? [f.startTime, o.startTime] : null"))
    print(f"354 families x 6 students: first contentful paint {paint[0]:.0f} ms, overview drawn {paint[1]:.0f} ms")
    assert paint[1] < 3000
    assert _segments(browser, "taxonomy-chart") == _expected_segments(report, "gap")
    assert [r["n"] for r in report["students"].values()] == [300] + [354] * 5
    assert report["students"][last]["taxonomy_not_classified"] == 10
    assert browser.find_element(By.ID, "family-count").text == "354 of 354 families"
    for (student, value), count in _expected_segments(report, "gap").items():
        if student == last:  # its segments list its own families only
            browser.find_element(
                By.CSS_SELECTOR, f'#taxonomy-chart .seg[data-student="{student}"][data-value="{value}"]').click()
            assert len(_listed(browser)) == count
    assert _errors(browser) == []


@pytest.mark.local
def test_ladder_demo_writes_the_html_report(browser, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the demo's local model needs the [local] extra (llama-cpp-python)")
    out, store = tmp_path / "demo", tmp_path / "demo.sqlite"
    result = CliRunner().invoke(app, ["demo", "--families", "2", "--k", "1", "--max-tokens", "16",
                                      "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    _open(browser, (out / "html" / "index.html").as_uri() + "#/family/0")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
    con = sqlite3.connect(store)
    pid = browser.find_element(By.TAG_NAME, "h1").text.removeprefix("Family ")
    n_rollouts = con.execute("SELECT COUNT(*) FROM rollouts_named WHERE pid = ?", (pid,)).fetchone()[0]
    con.close()
    assert report["students"]["local"]["n"] == 2
    assert len(browser.find_elements(By.CSS_SELECTOR, ".attempt")) == n_rollouts > 0
    assert _errors(browser) == []


def test_released_answers_render_with_their_latex_and_no_console_error(browser, tmp_path: Path,
                                                                      release_data: Path) -> None:
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    responses = [json.loads(line) for line in (release_data / "responses_sample.jsonl").read_text().splitlines()]
    store = _import(tmp_path, families)
    fill_released(store, families, responses)
    model = responses[0]["model"]
    out = tmp_path / "report"
    _report(store, out, [model])
    truncated = {(r["pid"], r["condition"], r["rollout"]) for r in responses if r["truncated"]}
    shown = list(_numbers(out).items())[:6]
    assert any(t[0] in dict(shown) for t in truncated)  # some of the pages have truncated answers
    for pid, n in shown:
        _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{n}")
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
        for summary in browser.find_elements(By.CSS_SELECTOR, ".attempt summary"):
            summary.click()
        for block in browser.find_elements(By.CSS_SELECTOR, ".target-block"):
            for a in block.find_elements(By.CSS_SELECTOR, ".attempt"):
                k = int(a.get_attribute("data-k"))
                marked = "truncated" in a.find_element(By.TAG_NAME, "summary").text
                assert marked == ((pid, block.get_attribute("data-target"), k) in truncated)
        assert browser.find_elements(By.CSS_SELECTOR, ".response .katex")
        assert _errors(browser) == [], pid


def test_html_of_a_code_report_is_refused_in_one_line(probed: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--student", A, "--store", str(probed), "--domain", "code", "--html"])
    assert result.exit_code == 2
    assert "--html shows math roadmap sets" in result.output and "Traceback" not in result.output


# ---------------------------------------------------------------- Markdown answers

MARKDOWN = r"""## Plan

1. Expand $(x+1)^2 = x^2 + 2x + 1$.
2. Use *the identity* $a_1 * b_2 = b_2 * a_1$ and \(x_1\).

```python
print("a_b * c")
```

$$\frac{a_1}{b_2}$$

So the answer is $\boxed{2}$."""

HOSTILE = """<script>window.pwned = 1</script>

<img src=x onerror="window.pwned = 2">

[click me](javascript:window.pwned=3) and <javascript:window.pwned=4>

<a href="#" onclick="window.pwned = 5">link</a> $\\href{javascript:window.pwned=6}{x}$"""


async def _answer(store: Path, student: str, pid: str, target: str, k: int, text: str, gold: str) -> None:
    """The stored answer of (target, k) replaced by ``text``, graded again."""
    async with Store.open(store) as s:
        r = next(r for r in await s.rollouts(student=student, pid=pid, target=target) if r.k == k)
        await s.put_rollout(r.model_copy(update={"response": text, "verdict": verify_inprocess(text, gold)}))


def test_answers_render_as_markdown_with_their_latex_and_hostile_ones_stay_text(browser, tmp_path: Path,
                                                                               release_data: Path) -> None:
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if reference_answer_problem(f) is None][:2]
    families[0] = families[0].model_copy(update={"parent_prompt": "Find $x$ with:\n\n- *first* $x_1 * x_2 = 1$\n- second\n\n" + HOSTILE})
    store = _import(tmp_path, families)
    fill(store, families, {A: 0.5}, k=1, grade=True)
    pid, gold = families[0].pid, families[0].parent_answer
    asyncio.run(_answer(store, A, pid, "C1_direct", 0, MARKDOWN, gold))
    asyncio.run(_answer(store, A, pid, "C3_gold_answers", 0, HOSTILE, gold))
    out = tmp_path / "report"
    _report(store, out, [A])
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{_numbers(out)[pid]}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
    for target in ("C1_direct", "C3_gold_answers"):
        browser.find_element(By.CSS_SELECTOR, f'.target-block[data-target="{target}"] .attempt summary').click()
    md = browser.find_element(By.CSS_SELECTOR, '.target-block[data-target="C1_direct"] .response')
    assert [h.text for h in md.find_elements(By.TAG_NAME, "h2")] == ["Plan"]
    assert len(md.find_elements(By.CSS_SELECTOR, "ol > li")) == 2
    assert md.find_element(By.TAG_NAME, "em").text == "the identity"
    assert md.find_element(By.TAG_NAME, "pre").text == 'print("a_b * c")'  # as written, no math in a code block
    # every formula typeset by KaTeX from its source, untouched by the Markdown pass
    tex_sources = [a.get_attribute("textContent") for a in md.find_elements(By.CSS_SELECTOR, "annotation")]
    assert tex_sources == ["(x+1)^2 = x^2 + 2x + 1", "a_1 * b_2 = b_2 * a_1", "x_1", r"\frac{a_1}{b_2}", r"\boxed{2}"]
    assert len(md.find_elements(By.CSS_SELECTOR, ".katex-display")) == 1
    assert not md.find_elements(By.CSS_SELECTOR, ".katex-error")
    # a hostile answer, and a hostile problem text: shown as text, never run
    for box in (browser.find_element(By.CSS_SELECTOR, '.target-block[data-target="C3_gold_answers"] .response'),
                browser.find_element(By.CSS_SELECTOR, ".problem-box")):
        shown = box.text
        for part in ("<script>window.pwned = 1</script>", '<img src=x onerror="window.pwned = 2">',
                     '<a href="#" onclick="window.pwned = 5">link</a>', "javascript:window.pwned=3"):
            assert part in shown
        assert not box.find_elements(By.CSS_SELECTOR, "script, img, [onerror], [onclick], a[href^='javascript']")
        for link in box.find_elements(By.TAG_NAME, "a"):
            link.click()
    problem = browser.find_element(By.CSS_SELECTOR, ".problem-box")
    assert len(problem.find_elements(By.CSS_SELECTOR, "ul > li")) == 2 and problem.find_elements(By.CSS_SELECTOR, "em")
    assert problem.find_elements(By.CSS_SELECTOR, ".katex")
    time.sleep(0.5)  # an onerror or a timer the payload might have set gets its chance
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert _errors(browser) == []


# ---------------------------------------------------------------- unclosed math (issue 32)

def test_a_megabyte_of_unclosed_math_openers_renders_in_seconds(browser, tmp_path: Path, release_data: Path) -> None:
    """The math of a text is found in one pass: 1 MB of unclosed \\[ (or \\() took the old regex,
    searching to the end from every opener, more than 7 minutes (100 KB: 5 s), the tab frozen."""
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family) if reference_answer_problem(f) is None][:2]
    store = _import(tmp_path, families)
    fill(store, families, {A: 0.5}, k=1, grade=False)
    pid = families[0].pid
    answers = {"C1_direct": "\\[" * 500_000, "C2_random": "\\(" * 500_000}
    for target, text in answers.items():
        asyncio.run(_answer(store, A, pid, target, 0, text, families[0].parent_answer))
    out = tmp_path / "report"
    _report(store, out, [A])
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{_numbers(out)[pid]}")
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
    for target, text in answers.items():
        block = f'.target-block[data-target="{target}"]'
        browser.find_element(By.CSS_SELECTOR, f"{block} .attempt summary").click()
        # a hang guard, not a speed: linear splitting renders it in 1.2-1.6 s, the quadratic one took
        # over 7 minutes; a minute leaves room for any load
        WebDriverWait(browser, 60).until(lambda d, block=block: d.execute_script(
            "return document.querySelector(arguments[0]).hasChildNodes()", f"{block} .response"))
        shown = browser.execute_script("return document.querySelector(arguments[0]).textContent", f"{block} .response")
        assert len(shown) >= len(text) // 2  # the text is there, as text (Markdown reads \[ as [)
    assert _errors(browser) == []


def _cut_off_families(store: Path, student: str) -> set[str]:
    """The families with a wrong answer of the student cut off at the token budget, read from the store."""
    con = sqlite3.connect(store)
    try:
        return {pid for (pid,) in con.execute(
            "SELECT DISTINCT r.pid FROM rollouts_named r JOIN calls c ON c.key = r.call_key WHERE r.student = ? "
            "AND c.finish_reason IN ('length', 'max_tokens') AND r.label != 'ACCEPT' AND r.status != 'ungraded'",
            (student,))}
    finally:
        con.close()


def test_the_overview_lists_its_cut_off_warnings_first_and_hatches_the_families_they_touch(browser, site) -> None:
    store, out, report = site
    _open(browser, (out / "html" / "index.html").as_uri())
    warned = [line.removeprefix("- **Warning:** ") for line in (out / "report.md").read_text().splitlines()
              if line.startswith("- **Warning:** ")]
    assert warned  # about 10% of the synthetic answers are cut off: some condition passes 10%
    banner = browser.find_element(By.ID, "cut-off-banner")
    assert [li.text for li in banner.find_elements(By.TAG_NAME, "li")] == warned
    # the banner comes before the charts, not below them
    first = browser.execute_script("return [...document.querySelectorAll('#main > *')].map(e => e.id || e.tagName)")
    assert first.index("cut-off-banner") < first.index("taxonomy-chart")
    index = {f["pid"]: f["labels"] for f in json.loads(re.sub(
        r"^ladderOverview\((.*)\);\s*$", r"\1", (out / "html" / "data" / "overview.js").read_text(), flags=re.S))["families"]}
    for student in (A, B):
        cut = _cut_off_families(store, student) & set(index)  # of the families the report keeps
        assert cut
        for chart, kind in (("taxonomy-chart", "gap"), ("outcome-chart", "outcome")):
            for seg in browser.find_elements(By.CSS_SELECTOR, f'#{chart} .seg[data-student="{student}"]'):
                value = seg.get_attribute("data-value")
                expected = sum(1 for pid in cut if index[pid][student][kind] == value)
                assert int(seg.get_attribute("data-cut")) == expected, (student, value)
                assert ("cut off at the token budget" in seg.get_attribute("title")) == (expected > 0)
    assert _errors(browser) == []


def test_the_family_list_typesets_the_problems_latex(browser, site) -> None:
    _, out, _ = site
    _open(browser, (out / "html" / "index.html").as_uri())
    with_math = [c for c in browser.find_elements(By.CSS_SELECTOR, "#family-list td.problem .clamp")
                 if "$" in c.get_attribute("data-problem")]
    assert with_math
    browser.execute_script("arguments[0].scrollIntoView()", with_math[0])
    WebDriverWait(browser, 10).until(lambda d: with_math[0].find_elements(By.CSS_SELECTOR, ".katex"))
    assert _errors(browser) == []


def test_a_family_page_lists_the_teachers_compile_attempts(browser, tmp_path: Path, release_data: Path) -> None:
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                if reference_answer_problem(f) is None][:2]
    store = _import(tmp_path, families)
    fill(store, families, {A: 0.5}, k=1, grade=False)
    pid = families[0].pid
    plan = {"milestones": [{"type": "COMPUTE", "description": "the area", "canonical_answer": "12"}]}

    async def attempts() -> None:
        async with Store.open(store) as s:
            await s.put_compile_attempt(pid, "release", 0, plan=plan, passed=False,
                                        errors=[{"check": "leak", "milestone": 0, "reason": "gives away the answer"}])
            await s.put_compile_attempt(pid, "release", 1, plan=plan, errors=[], passed=True)

    asyncio.run(attempts())
    out = tmp_path / "report"
    _report(store, out, [A])
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{_numbers(out)[pid]}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".compile-attempts"))
    items = browser.find_elements(By.CSS_SELECTOR, ".compile-attempts > li")
    assert [i.get_attribute("data-passed") for i in items] == ["false", "true"]
    assert "attempt 1: failed" in items[0].text and "[leak] milestone 1: gives away the answer" in items[0].text
    assert "COMPUTE" in items[1].text and "12" in items[1].text
    # a family with no attempts (imported) has no such section
    _open(browser, (out / "html" / "index.html").as_uri() + f"#/family/{_numbers(out)[families[1].pid]}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.student"))
    assert not browser.find_elements(By.CSS_SELECTOR, ".compile-attempts")
    assert _errors(browser) == []
