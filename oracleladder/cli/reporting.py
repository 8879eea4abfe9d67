"""`ladder report`, `view`, `compare` and `demo`: what the store's rollouts say, written, served
or compared; the demo runs the whole pipeline offline."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import demo as _demo
from .._lazy import lazy_module
from ..experiment import Choice, Experiment, Report, replication as _replication
from ..experiment.configs import CompareInput, ReportConfig
from ..report import console as terminal, replication as _replicated
from ..report.palette import n_families
from ..schemas.sheets import write_rows
from ..store import DEFAULT_STORE
from ..viewer.serve import serve
from .common import (
    CorrectionsOpt,
    DomainOpt,
    KOpt,
    MaxTokensOpt,
    SourceOpt,
    StoreOpt,
    ThresholdOpt,
    console,
    existing,
    fail,
    run_experiment,
    say,
)
from .display import bar
from .options import with_config
from .selecting import with_choice

if TYPE_CHECKING:
    from ..report import compare as _compare
else:  # its tables' models take ~10 ms to build: loaded by the command that uses it, not by `ladder --help`
    _compare = lazy_module("oracleladder.report.compare")


def _write_report(store: Path, student: list[str], out: Path, config: ReportConfig, html: bool,
                  picked: Choice) -> Report:
    """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too)."""
    async def write(ex: Experiment) -> Report:
        if html:
            ex.check_html(config.domain)
        report = await ex.report(student, config, choice=picked)
        await ex.write_report(report, out, html=html)
        return report

    return run_experiment(store, write, reading=True)


HtmlOpt = Annotated[bool, typer.Option("--html", help="Also write the HTML report (out/html/index.html): overview, "
                                       "one page per family with every attempt; opens from the file system.")]


@with_choice(by_run=True)
@with_config
def report(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat for several students).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, report.json and the plots.")] = Path("report"),
    *,
    config: ReportConfig,
    store: StoreOpt = DEFAULT_STORE,
    html: HtmlOpt = False,
    picked: Choice = Choice(),
) -> None:
    """Outcome and taxonomy tables, controls, CIs and plots for any number of students, each at one
    setting (--max-tokens, --run, ...; --by-run: each setting side by side)."""
    existing(store)
    written = _write_report(store, student, out, config, html, picked)
    console.print(f"report written to {out}/" + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""),
                  highlight=False, markup=False)
    for line in terminal.missing_notices(written.missing):
        say(line)
    for line in written.warnings:
        say(f"warning: {line}")


class ExportFormat(str, Enum):
    csv = "csv"
    parquet = "parquet"


class ExportPer(str, Enum):
    family = "family"
    rollout = "rollout"


@with_choice(by_run=True)
def export_results(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat for several students).")],
    fmt: Annotated[ExportFormat, typer.Option("--format", help="csv (opens in a spreadsheet) or parquet.")] = ExportFormat.csv,
    per: Annotated[ExportPer, typer.Option("--per", help="family: one row per student and family (outcome, milestone "
                                           "tests, gaps, n_correct and k per condition and milestone); rollout: one "
                                           "row per attempt.")] = ExportPer.family,
    out: Annotated[Path | None, typer.Option("--out", help="The file to write (default results.csv or results.parquet).")] = None,
    threshold: ThresholdOpt = 1,
    source: SourceOpt = "release",
    use_corrections: CorrectionsOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    domain: DomainOpt = "math",
    picked: Choice = Choice(),
) -> None:
    """The table of `Report.to_pandas()` (per family or per rollout) as CSV or Parquet, the students each
    at one setting as `ladder report` reads them (needs pandas: pip install 'oracleladder[pandas]')."""
    existing(store)
    path = out or Path(f"results.{fmt.value}")
    report = run_experiment(store, lambda ex: ex.report(student, source=source, threshold=threshold,
                                                        use_corrections=use_corrections, domain=domain,
                                                        choice=picked), reading=True)
    try:
        # nullable integers: a count not made is empty, not NaN, and a count stays an integer
        frame = report.to_pandas(per.value).convert_dtypes()
    except ImportError:  # the optional extra
        fail("export-results needs pandas: pip install 'oracleladder[pandas]'")
    if frame.empty:
        fail(f"nothing to export: no {per.value} rows for {', '.join(student)} on '{source}'", 1)
    if fmt is ExportFormat.parquet:
        frame.to_parquet(path, index=False)
    else:  # through sheets: a cell that a spreadsheet would run as a formula is written as text
        write_rows(path, list(frame.columns), frame.astype(object).where(frame.notna(), None).itertuples(index=False))
    say(f"{len(frame)} rows ({per.value}) written to {path}")
    for line in terminal.missing_notices(report.missing):
        say(line)
    for line in report.warnings:
        say(f"warning: {line}")


@with_choice(by_run=True)
def view(
    student: Annotated[list[str], typer.Option("--student", help="Student name (repeat to show several).")],
    threshold: ThresholdOpt = 1,
    source: SourceOpt = "release",
    use_corrections: CorrectionsOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 8765,
    a: Annotated[str | None, typer.Option("--a", help="With --b: serve `ladder compare --html` of these two "
                                             "roadmap sets (one --student) instead of the report.")] = None,
    b: Annotated[str | None, typer.Option("--b", help="The second roadmap set of the comparison.")] = None,
    allow_mixed_graders: Annotated[bool, typer.Option("--allow-mixed-graders", help="With --a/--b: compare even when the two sets were graded by different graders.")] = False,
    picked: Choice = Choice(),
) -> None:
    """Serve the HTML report (or, with --a and --b, the comparison) of a live store on 127.0.0.1, rebuilt
    when the store changes; Ctrl-C stops."""
    existing(store)
    if (a is None) != (b is None) or (a is not None and len(student) != 1):
        fail("a comparison takes --a, --b and one --student")
    seen: list[tuple[int, ...] | None] = [None]

    def refresh(out: Path) -> None:
        stamp = tuple(p.stat().st_mtime_ns for p in (store, Path(f"{store}-wal")) if p.exists())
        if stamp != seen[0]:
            if a is not None and b is not None:
                _write_compare(store, CompareInput(a=a, b=b, student=student[0], use_corrections=use_corrections,
                                                   allow_mixed_graders=allow_mixed_graders, choice=picked), out, True)
            else:
                _write_report(store, student, out, ReportConfig(threshold=threshold, source=source,
                                                                use_corrections=use_corrections), True, picked)
            seen[0] = stamp

    serve(refresh, port, lambda url: typer.echo(f"serving {url} (Ctrl-C stops)"), say)


def _write_compare(store: Path, given: CompareInput, out: Path, html: bool) -> dict:
    """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html too);
    returns the comparison."""
    return run_experiment(store, lambda ex: ex.write_compare(given, out, html=html), reading=True)


@with_choice()
def compare(
    a: Annotated[str, typer.Option("--a", help="First roadmap set: a teacher, 'release', or TEACHER@coarse|fine.")],
    student: Annotated[str, typer.Option("--student", help="The student probed on both sets.")],
    b: Annotated[str | None, typer.Option("--b", help="Second roadmap set of the same problems (not with --primitive).")] = None,
    primitive: Annotated[bool, typer.Option("--primitive", help="Compare the primitive against the roadmap on the families of --a: C2-primitive vs C2 for the student (docs/primitive.md).")] = False,
    threshold: ThresholdOpt = 1,
    out: Annotated[Path, typer.Option("--out", help="Folder for compare.md and compare.json.")] = Path("compare"),
    use_corrections: CorrectionsOpt = False,
    allow_mixed_graders: Annotated[bool, typer.Option("--allow-mixed-graders", help="Compare even when the two sets were graded by different graders.")] = False,
    store: StoreOpt = DEFAULT_STORE,
    html: Annotated[bool, typer.Option("--html", help="Also write the comparison as HTML (out/html/index.html): the "
                                       "tables, and each problem's two roadmaps side by side with the student's "
                                       "attempts; opens from the file system.")] = False,
    picked: Choice = Choice(),
) -> None:
    """Compare two teachers or two granularities on the same problems (paper Appendix P), or with
    --primitive the primitive against the roadmap on one set; the student's results at one setting
    (--max-tokens, --run, ...)."""
    existing(store)
    if primitive == (b is not None):
        fail("give --b (a second roadmap set) or --primitive (primitive vs roadmap on --a), not both")
    if primitive:
        if html:
            fail("--html is for two roadmap sets (--b), not --primitive")
        result = run_experiment(store, lambda ex: ex.write_primitive_compare(
            a, student, out, threshold=threshold, use_corrections=use_corrections, choice=picked), reading=True)
        say(f"compared the primitive and the roadmap of {a} for {student} on {n_families(result.n)}: "
            f"{out}/primitive_vs_roadmap.md")
        return
    assert b is not None
    compared = _write_compare(store, CompareInput(a=a, b=b, student=student, use_corrections=use_corrections,
                                                  allow_mixed_graders=allow_mixed_graders, choice=picked), out, html)
    for warning in filter(None, [_compare.prompt_warning(compared), *compared["warnings"]]):
        say(f"warning: {warning}")
    console.print(f"compared {a} and {b} for {student}: {out}/compare.md"
                  + (f" (HTML: {out / 'html' / 'index.html'})" if html else ""), highlight=False, markup=False)


@with_choice()
def replication(
    source: Annotated[list[str], typer.Option("--source", help="A roadmap set as SET[,tau=N][,student=NAME] (repeat: one column each, in order), e.g. --source release,student=mile2k --source math500,tau=3 --source aime.")],
    student: Annotated[str | None, typer.Option("--student", help="The student of every set that names none.")] = None,
    threshold: Annotated[int, typer.Option("--threshold", min=1, help="tau of every set that names none.")] = 1,
    out: Annotated[Path, typer.Option("--out", help="Folder for replication.md, replication.json and replication.png.")] = Path("replication"),
    use_corrections: CorrectionsOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    picked: Choice = Choice(),
) -> None:
    """The roadmap effect across roadmap sets (paper Table 2, the explainer's Figure 6): the families solved
    under C1, the controls, C2 and C3 on each set, each read for its own student at its own tau, in one
    table and one figure; every set's results at one setting (--max-tokens, --run, ...)."""
    existing(store)
    sets = [_replication.parse_set(s, student, threshold) for s in source]
    columns = run_experiment(store, lambda ex: _replication.replication(ex, sets, use_corrections=use_corrections,
                                                                       choice=picked), reading=True)
    written = _replicated.write_replication(columns, out)
    say(f"replication of {len(columns)} roadmap sets written to {written[0]} ({written[2].name}: the figure)")


def demo(
    store: StoreOpt = Path("demo.sqlite"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the report.")] = Path("demo-report"),
    families: Annotated[int | None, typer.Option(min=1, help="Probe only the first N families of the demo set.")] = None,
    k: KOpt = _demo.K,
    max_tokens: MaxTokensOpt = _demo.MAX_TOKENS,  # the local model's: it cuts none of the demo's answers off
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed offset: another N samples other answers (other calls in the store); 0 keeps the demo's own.")] = 0,
    open_report: Annotated[bool, typer.Option("--open", help="Open the HTML report in a browser when it is written.")] = False,
) -> None:
    """The whole pipeline on the embedded model, offline: import the demo set, probe, report (docs/demo.md)."""
    result = run_experiment(store, lambda ex: _demo.run(ex, out, families=families, k=k, max_tokens=max_tokens,
                                                         seed=seed, progress=bar))
    for part in _demo.summary(result):
        console.print(part, highlight=False, markup=False)
    if open_report and not _demo.open_report(result.html):
        say(f"no browser found here: open {result.html} in one")
