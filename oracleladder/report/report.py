"""The report's entry points, as the Experiment API and the command line call them: `write_report`
computes every table once (`tables.report_tables`) and writes report.json (their JSON form),
report.md (`markdown`) and the plots (`plots`); `summarize` and `missing_counts` give a student's
tables and the verdicts they lack in report.json's form. `known_outcome` and `known_gap`, a family's
labels as the tables count them, are the tables'."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults, known_outcome
from .markdown import report_md
from .tables import (
    N_RESAMPLES,
    SEED,
    ReportInput,
    known_gap,
    missing_verdicts,
    report_tables,
    student_tables,
)

if TYPE_CHECKING:
    from . import plots as _plots
else:  # matplotlib: loaded by the first report written, not by `ladder --help`, a probe or a comparison
    _plots = lazy_module("oracleladder.report.plots")

__all__ = ["ReportInput", "known_gap", "known_outcome", "missing_counts", "summarize", "write_files", "write_report"]



def write_files(out: Path, data: Mapping[str, object], markdown: str, name: str = "report") -> None:
    """A report's two files in ``out`` (made): NAME.json (its tables' JSON form) and NAME.md; every report
    (the ladder's, PRIM's) writes them here."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=2))
    (out / f"{name}.md").write_text(markdown)


def summarize(fams: list[FamilyResults], tau: int = 1, mode: str = "strict", *,
              seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict:
    """One student's tables (`tables.student_tables`) in report.json's form."""
    return student_tables(fams, tau, mode, seed=seed, n_resamples=n_resamples).model_dump()


def missing_counts(ungraded: Iterable[str], failed: Iterable[str]) -> dict:
    """The verdicts the tables lack (`tables.missing_verdicts`) in report.json's form."""
    return missing_verdicts(ungraded, failed).model_dump()


def write_report(given: ReportInput, out_dir: str | Path) -> dict:
    """report.json, report.md and the plots of ``given.students`` in ``out_dir``; returns what report.json
    holds. The parts of ``given`` (`ReportInput`), each by its name:

    ``tau``, the correct attempts of K that count as solved; ``roadmap_set``, the set's name;
    ``missing``: per student, its missing verdicts (`missing_counts`; none missing when left out).
    ``graders`` names, per student, the grader and its version (e.g. "strict (strict-2)"); ``ungradable``
    lists the families left out because their reference answer is unusable (pid -> why); ``formats``,
    per student, its format audit (`oracleladder.audit.format.format_audit`): a report section, and a
    warning in the header where a condition's answers were cut off at --max-tokens; ``settings``, per
    student, the settings its results were made at (`experiment.selection`: every table states them);
    ``base``, the student the change tables (Tables 18, 38) read the others against (default: the first);
    ``families``, the set's families (Tables 7, 8 and 48 read their milestones: without them, one line says
    so); ``budgets``, per student probed at two --max-tokens, its two columns with their budgets, the lower
    first (Tables 15 and 22); ``order``, the columns as checkpoints left to right in Figure 7 (default: as
    given); ``benchmarks``, per student, the pass@1 of its plain benchmark probe ``benchmark`` at the same
    settings (Table 1's last column); ``reviews``, per student, its automated review's labels by pid (None:
    unreviewed; Table 42); ``leaking``, the set's families whose milestone gold restates the parent answer
    (pid -> leak level; the leak residual, "not available" without it); ``containment``, per student with
    unaided attempts to read, the milestone answers in them (`oracleladder.audit.roadmap.roadmap_match`:
    Tables 36 and 37; one line says which students have none); ``kept_leaking``, the students probed with
    the milestones the leak rule drops kept (``--keep-leaking``: the leak rule section names them);
    ``spent``, per student, what the runs that made its answers spent and how many later runs reused;
    ``panel_truncation``, per imported panel, its answers cut off and unreadable as its records said (a
    warning in the header, as a format audit's)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = report_tables(given)
    res = tables.model_dump()
    write_files(out, res, report_md(tables))
    if given.students:
        _plots.write_plots(tables, out)
    return res
