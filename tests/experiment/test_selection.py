"""A report never pools a student's results made at different settings (issue 30, item 1).

The store is a real one: tests/data/before-house/before.sqlite (a probe of a scripted student at
--max-tokens 256, K = 2, on six released families), to which a second probe run at --max-tokens 512 is
added the way the store files one: every rollout again, under the new run, with its own call key. At
512 every C1 answer is accepted, so the two budgets give different numbers."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from oracleladder import Experiment
from oracleladder.experiment import Choice, ExperimentError

BEFORE = Path(__file__).resolve().parents[1] / "data" / "before-house"
S = "openai/student"
AT_256 = {"Direct": 3, "Roadmap-Needed": 0, "Answers-Needed": 1, "Unrecovered": 1}  # before-house's own report
AT_512 = {"Direct": 5, "Roadmap-Needed": 0, "Answers-Needed": 0, "Unrecovered": 0}  # every C1 answer accepted


def two_budgets(tmp_path: Path, change: dict | None = None) -> Path:
    """before.sqlite and a second run, at --max-tokens 512 (or with ``change`` to its recorded config)."""
    store = tmp_path / "two.sqlite"
    shutil.copy(BEFORE / "before.sqlite", store)
    with sqlite3.connect(store) as con:
        (run_id, config), = con.execute("SELECT id, config FROM runs").fetchall()
        con.execute("INSERT INTO runs (id, kind, config, started_at, finished_at, status) "
                    "VALUES ('probe-512', 'probe', ?, '2026-12-06T01:00:00', '2026-12-06T01:01:00', 'done')",
                    (json.dumps(json.loads(config) | (change or {"max_tokens": 512})),))
        con.execute("INSERT INTO names (name) VALUES ('probe-512')")
        con.execute("""
            INSERT INTO rollouts (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, label, reason,
                                  extracted, status, created_at, response)
            SELECT r.student_ref, r.source_ref, r.pid_ref, r.target_ref, r.k, randomblob(32),
                   (SELECT id FROM names WHERE name = 'probe-512'),
                   CASE WHEN t.name = 'C1_direct' THEN 'ACCEPT' ELSE r.label END, r.reason, r.extracted, r.status,
                   r.created_at, COALESCE(r.response, (SELECT c.response FROM calls c WHERE c.key = r.call_key))
            FROM rollouts r JOIN names t ON t.id = r.target_ref""")
    return store


async def test_two_budgets_are_refused_together_and_read_apart(tmp_path: Path) -> None:
    async with Experiment(two_budgets(tmp_path)) as ex:
        with pytest.raises(ExperimentError) as refused:
            await ex.report([S])
        message = str(refused.value)
        assert "\n" not in message
        assert "max_tokens=256 (K = 2" in message and "max_tokens=512 (K = 2" in message
        assert "--max-tokens 256 or --max-tokens 512" in message and "--by-run" in message

        alone = await ex.report([S], choice=Choice(max_tokens=256))
        assert list(alone.results) == [S]
        summary = alone.summary(S)
        assert summary["outcomes"] == AT_256 and summary["k"] == 2  # pooled, it would read K = 4
        assert alone.settings == {S: "K = 2, max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown"}
        assert (await ex.report([S], choice=Choice(run="probe-512"))).summary(S)["outcomes"] == AT_512

        side = await ex.report([S], choice=Choice(by_run=True))
        a, b = f"{S}@max_tokens=256", f"{S}@max_tokens=512"
        assert list(side.results) == [a, b]
        assert side.summary(a)["outcomes"] == AT_256 and side.summary(b)["outcomes"] == AT_512
        written = await ex.write_report(side, tmp_path / "side")
    md = (tmp_path / "side" / "report.md").read_text()
    assert (f"At: {a}: K = 2, max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown; "
            f"{b}: K = 2, max_tokens = 512, temperature = 1.0, grader = strict, prompts = unknown.") in md
    assert written["students"][a]["settings"].endswith("max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown")
    assert written["students"][a]["format"]["max_tokens"] == [256]  # each column's audit is of its own run
    assert written["students"][b]["format"]["max_tokens"] == [512]
    # the two budgets are two columns of every table, and the change table reads one against the other
    assert written["changes"][b]["delta"] == {"Direct": 2, "Roadmap-Needed": 0, "Answers-Needed": -1,
                                              "Any probe": 1}
    # Tables 22 and 15: the student at its two budgets, the lower first (the store's Stage 0 is read for 15)
    assert tuple(written["budgets"][S]["max_tokens"]) == (256, 512)
    assert (written["budgets"][S]["outcomes_low"], written["budgets"][S]["outcomes_high"]) == (
        {"Direct": 3, "Roadmap-Needed": 0, "Answers-Needed": 1, "Any probe": 4},
        {"Direct": 5, "Roadmap-Needed": 0, "Answers-Needed": 0, "Any probe": 5})
    assert f"| {S} | 5 | 3 | 0 | 1 | 4 | 5 | 0 | 0 | 5 |" in md
    # Table 22's transitions, by hand: at 512 every family is Direct, from Direct (3), Answers-Needed (1) and
    # Unrecovered (1) at 256
    moved = written["budgets"][S]["transitions"]
    assert {a: row["Direct"] for a, row in moved["counts"].items()} == {
        "Direct": 3, "Roadmap-Needed": 0, "Answers-Needed": 1, "Unrecovered": 1}
    assert (moved["n"], moved["same"], moved["col_totals"]["Direct"]) == (5, 3, 5)
    assert "| Unrecovered | 1 | 0 | 0 | 0 | 1 |" in md and "Same outcome: 3 of 5." in md


async def test_a_run_from_before_prompts_were_recorded_is_its_own_group(tmp_path: Path) -> None:
    """before.sqlite's run recorded no prompt versions ("unknown"); a run that did is another group."""
    async with Experiment(two_budgets(tmp_path, {"prompts": {"c1_direct": "aaaaaaaaaaaa"}})) as ex:
        with pytest.raises(ExperimentError) as refused:
            await ex.report([S])
        message = str(refused.value)
        assert "prompts=unknown (K = 2" in message and "prompts=c1_direct@aaaaaaaaaaaa (K = 2" in message
        assert "pick one with --prompt unknown or --prompt c1_direct@aaaaaaaaaaaa" in message
        old = await ex.report([S], choice=Choice(prompt="unknown"))
        assert old.summary(S)["outcomes"] == AT_256 and old.settings[S].endswith("prompts = unknown")
        new = await ex.report([S], choice=Choice(prompt="c1_direct@aaaaaaaaaaaa"))
        assert new.summary(S)["outcomes"] == AT_512


async def test_the_first_k_samples_are_read_with_k(tmp_path: Path) -> None:
    async with Experiment(two_budgets(tmp_path)) as ex:
        report = await ex.report([S], choice=Choice(max_tokens=256, k=1))
        assert report.summary(S)["k"] == 1 and report.settings[S].startswith("K = 1,")
        with pytest.raises(ExperimentError, match="match the settings asked for.*max_tokens=256"):
            await ex.report([S], choice=Choice(max_tokens=1024))


@pytest.fixture(scope="module")
def by_run_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the two budgets side by side (by run), with its HTML, written once for the tests
    that read it (its six figures: a second of CPU each time): the folder it is written in."""
    folder = tmp_path_factory.mktemp("by_run")

    async def write() -> None:
        async with Experiment(two_budgets(folder)) as ex:  # reads the store: no grading, no pool
            await ex.write_report(await ex.report([S], choice=Choice(by_run=True)), folder / "out", html=True)

    asyncio.run(write())
    return folder / "out"


def test_the_html_report_shows_each_setting_as_its_own_student(by_run_site: Path) -> None:
    overview = (by_run_site / "html" / "data" / "overview.js").read_text()
    data = json.loads(overview[overview.index("(") + 1:overview.rindex(")")])
    students = data["provenance"]["students"]
    assert {s: (x["settings"], x["max_tokens"]) for s, x in students.items()} == {
        f"{S}@max_tokens=256": ("K = 2, max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown", [256]),
        f"{S}@max_tokens=512": ("K = 2, max_tokens = 512, temperature = 1.0, grader = strict, prompts = unknown", [512])}


async def test_order_names_each_column_once(tmp_path: Path) -> None:
    a, b = f"{S}@max_tokens=256", f"{S}@max_tokens=512"
    async with Experiment(two_budgets(tmp_path)) as ex:
        with pytest.raises(ExperimentError, match="^order must name each of the report's columns once"):
            await ex.report([S], choice=Choice(by_run=True), order=[a])
        report = await ex.report([S], choice=Choice(by_run=True), order=[b, a])
        written = await ex.write_report(report, tmp_path / "out")
    assert written["meta"]["order"] == [b, a] and (tmp_path / "out" / "trajectory.png").exists()


def test_the_html_report_has_each_figure_and_new_table_with_its_settings(by_run_site: Path) -> None:
    site = by_run_site / "html"
    overview = (site / "data" / "overview.js").read_text()
    data = json.loads(overview[overview.index("(") + 1:overview.rindex(")")])
    assert [f["file"] for f in data["figures"]] == [f"figures/{n}.png" for n in (
        "taxonomy", "fingerprint", "specificity", "accuracy", "change", "trajectory")]  # two columns: all six
    for f in data["figures"]:
        assert (site / f["file"]).read_bytes() == (by_run_site / Path(f["file"]).name).read_bytes()
    tables = data["tables_html"]
    at = (f"At: {S}@max_tokens=256: K = 2, max_tokens = 256, temperature = 1.0, grader = strict, prompts = unknown; "
          f"{S}@max_tokens=512: K = 2, max_tokens = 512, temperature = 1.0, grader = strict, prompts = unknown.")
    for title in ("Outcomes at two budgets (Table 22", "Stage 0 at two budgets (Table 15)",
                  "Stage 0 milestone solvability and fingerprint (Table 14", "(Table 28)", "(Table 8, tau = 1)"):
        part = tables.split(title)[1]
        assert at in part.split("</h2>")[1].split("<h2>")[0], title  # its settings under its title
    moves = tables.split(f"Outcome transitions of {S} from max_tokens 256 (rows) to 512 (columns):")[1]
    assert at in moves.split("<table>")[0] and "Same outcome: 3 of 5." in moves  # the HTML has Table 22's matrix
