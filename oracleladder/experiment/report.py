"""The Report a reader returns (`Reader.report`): per column (a student, or STUDENT@setting=value side by
side), its results on a roadmap set at one setting and what is in no table; its tables as dicts
(`summary`), as DataFrames (`to_pandas`) and in a notebook (`_repr_html_`). `Reader.write_report` writes it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..clients.base import TRUNCATED
from ..ladder.outcomes import NOT_DETERMINED, FamilyResults, Outcome, outcome_label
from ..report.palette import n_families
from ..report.tables import why_unreadable
from ..schemas.rubric import RubricLabel
from .selection import Picked

if TYPE_CHECKING:
    import pandas

    from ..report import report as _report, tables as _tables
    from ..report.tables import Containment, FormatAudit
    from ..report.tables.truncation import PanelTruncation
else:  # loaded when first needed (SciPy; pandas: an optional extra)
    _report = lazy_module("oracleladder.report.report")
    _tables = lazy_module("oracleladder.report.tables")
    pandas = lazy_module("pandas")


@dataclass
class Report:
    """What a report counts: per column (a student, or STUDENT@setting=value side by side), its results
    on a roadmap set at one setting (families whose reference answer is unusable left out), and what is
    in no table. ``summary(student)`` gives its tables as a dict, ``to_pandas()`` its per-family rows;
    ``Experiment.write_report`` writes report.md, report.json, the plots and the HTML."""

    source: str
    domain: str
    tau: int
    families: list  # the set's families
    results: dict[str, list[FamilyResults]]
    missing: dict[str, dict]  # per student, its missing_counts (ungraded rollouts, failed jobs)
    ungradable: dict[str, str]  # pid -> why its reference answer is unusable
    graders: dict[str, str] | None = None  # per student, the grader and version of its rollouts
    formats: dict[str, FormatAudit] | None = None  # per student with rollouts, its format audit
    picked: dict[str, Picked] = field(default_factory=dict)  # per column, the group of results it reads
    base: str | None = None  # the column the change tables read the others against (None: the first)
    order: list[str] | None = None  # Figure 7's checkpoints left to right (None: the columns' order)
    benchmark: str | None = None  # the plain benchmark probe whose pass@1 is Table 1's last column
    benchmarks: dict[str, float] = field(default_factory=dict)  # per column, that pass@1 (absent: none)
    # per column with a stored review (`ladder audit review`), its labels by pid (None: unreviewed)
    reviews: dict[str, dict[str, RubricLabel | None]] = field(default_factory=dict)
    # the math set's C3-only families whose milestone gold restates the parent answer (pid -> leak level);
    # None: not a math set
    leaking: dict[str, str] | None = None
    # per column with C1 attempts to read, the milestone answers in them (Tables 36, 37; absent: none)
    containment: dict[str, Containment] = field(default_factory=dict)
    finish: dict[str, str | None] = field(default_factory=dict)  # each rollout's call's finish reason, by call key
    # per imported panel, its answers cut off and unreadable as its records said (no rollout to read them from)
    panel_truncation: dict[str, PanelTruncation] = field(default_factory=dict)

    @property
    def budgets(self) -> dict[str, tuple[tuple[str, int], tuple[str, int]]]:
        """Per student read at exactly two --max-tokens (``--by-run``), its two columns with their budgets, the
        lower first (Tables 15 and 22)."""
        by: dict[str, list[tuple[str, int]]] = {}
        for label, p in self.picked.items():
            if p.settings.max_tokens is not None:
                by.setdefault(p.student, []).append((label, p.settings.max_tokens))
        pairs = {s: sorted(cols, key=lambda c: c[1]) for s, cols in by.items() if len(cols) == 2}
        return {s: (lo, hi) for s, (lo, hi) in pairs.items() if lo[1] != hi[1]}

    @property
    def warnings(self) -> list[str]:
        """A line per column and condition whose answers were cut off or unreadable, as report.md's header
        says them (`tables.cut_off_warnings`)."""
        return [w for label in self.results
                for w in _tables.cut_off_warnings(label, (self.formats or {}).get(label), self.panel_truncation.get(label))]

    @property
    def settings(self) -> dict[str, str]:
        """Per column, the settings its results were made at ("K = 8, max_tokens = 4096, ...")."""
        return {label: p.describe() for label, p in self.picked.items()}

    def summary(self, student: str) -> dict:
        """A column's tables in report.json's form; a table whose run is missing is None, never 0."""
        return _report.summarize(self.results[student], self.tau)

    def to_pandas(self, per: str = "family"):  # -> pandas.DataFrame (pandas: the optional extra)
        """The per-family table of report.json's "families" as a DataFrame, one row per student and family
        (``per="family"``: its outcome, milestone tests, gaps, and n_correct / k per condition and milestone
        as columns ``C1_direct_n_correct``, ``C1_direct_k``, ``m0_n_correct`` ...); or one row per rollout
        (``per="rollout"``: student, pid, target, sample, verdict, reason, the call's finish reason, whether
        it was cut off by the token budget and why an answer had nothing to grade, `audit.format`'s words),
        the families the tables leave out (an unusable reference answer) left out of both. None where a run
        is missing."""
        try:
            frame = pandas.DataFrame
        except ImportError:  # the optional extra
            raise ImportError("Report.to_pandas needs pandas: pip install 'oracleladder[pandas]'") from None
        if per == "rollout":
            return frame(
                [{"student": label, "pid": r.pid, "target": r.target, "sample": r.k, "label": r.verdict.label.value,
                  "accepted": r.verdict.accepted if r.verdict.graded else None, "reason": r.verdict.reason,
                  "finish_reason": (finish := self.finish.get(r.call_key)), "truncated": finish in TRUNCATED,
                  "unreadable": why_unreadable(r, finish), "run_id": r.run_id}
                 for label, p in self.picked.items() for r in p.rollouts if r.pid not in self.ungradable],
                columns=["student", "pid", "target", "sample", "label", "accepted", "reason", "finish_reason",
                         "truncated", "unreadable", "run_id"])
        if per != "family":
            raise ValueError(f"per must be 'family' or 'rollout', not {per!r}")
        rows = []
        for label, fams in self.results.items():
            for f in _tables.family_rows(fams, self.tau):
                row = {"student": label, **f.model_dump(exclude={"conditions", "milestones"})}
                for target, c in {**f.conditions, **f.milestones}.items():
                    row[f"{target}_n_correct"], row[f"{target}_k"] = c.n_correct, c.k
                rows.append(row)
        return frame(rows)

    def __repr__(self) -> str:
        cols = ", ".join(f"{label} ({n_families(len(res))})" for label, res in self.results.items())
        return f"<Report on '{self.source}', tau = {self.tau}: {cols}>"

    def _repr_html_(self) -> str:
        """A notebook's view: one row per column with its settings and outcome counts."""
        outs = [o.value for o in Outcome] + [NOT_DETERMINED]
        head = "".join(f"<th>{escape(h)}</th>" for h in ["Student", "Settings", "Families", *outs])
        body = ""
        for label, res in self.results.items():
            counts = Counter(outcome_label(f, self.tau) for f in res)
            cells = [label, self.settings.get(label, ""), str(len(res)), *(str(counts[o]) for o in outs)]
            body += "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"
        return (f"<p>OracleLadder report on <code>{escape(self.source)}</code>, tau = {self.tau}</p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
