"""report.md's head: its title, the settings each table was computed at (`at`), the notes on what the
tables leave out, and the missing verdicts."""

from __future__ import annotations

from collections.abc import Sequence

from ...schemas.conditions import LADDER
from ..palette import n_families
from ..tables import NOT_RUN, STAGE0, FormatAudit, ReportTables, StudentReport
from .cells import table
from .format_audit import budget, constrained

# ---------------------------------------------------------------- report.md

def format_audits(r: ReportTables) -> dict[str, FormatAudit]:
    return {s: t.format for s, t in r.students.items() if t.format is not None}


def header(r: ReportTables) -> list[str]:
    """Title, what was counted and how, and a warning per condition whose answers were cut off
    (`StudentReport.warnings`)."""
    meta, formats = r.meta, format_audits(r)
    ks = ", ".join(f"{s}: {n_families(t.n)}, K = {t.k if t.k else NOT_RUN} per condition"
                   + (f", K = {t.k_stage0} per milestone (Stage 0)" if t.k_stage0 else "")
                   for s, t in r.students.items())
    L = ["# OracleLadder diagnosis report", "",
         (f"Roadmap set: {meta.roadmap_set}. " if meta.roadmap_set else "")
         + (f"Teacher prompt: {', '.join(meta.teacher_prompts)}. " if meta.teacher_prompts else "")
         + f"Students: {ks}. Success threshold tau = {meta.tau} correct of K per condition. "
         f"Bootstrap: {meta.n_resamples} family-level resamples, seed {meta.seed}."
         + ("" if not meta.graders else " Graded by: " + "; ".join(f"{s}: {g}" for s, g in meta.graders.items()) + ".")
         + ("" if not formats else
            " Token budget: " + "; ".join(f"{s}: {budget(a)}" for s, a in formats.items()) + ".")
         + constrained(formats), ""]
    cut = [w for s, t in r.students.items() for w in t.warnings(s)]
    return L + [f"- **Warning:** {w}" for w in cut] + ([""] if cut else [])  # a list: one warning a line


def at(r: ReportTables, names: Sequence[str] | None = None) -> list[str]:
    """The line under each table's title: the settings the results of its students (``names``, default
    every one) were made at."""
    known = {s: t.settings for s, t in r.students.items() if t.settings and (names is None or s in names)}
    return ["At: " + "; ".join(f"{s}: {v}" for s, v in known.items()) + ".", ""] if known else []


def _student_notes(s: str, t: StudentReport) -> list[str]:
    notes = [f"- {s}: {t.spent.said()}."] if t.spent and t.spent.runs else []
    # the opt-in primitive rung is named only once it was run (its columns say "not run" anyway)
    not_run = [c for c in t.not_run if t.primitive_run or c not in LADDER.optional]
    if not_run:
        notes.append(f"- {s}: not run: {', '.join(LADDER[c].short for c in not_run)}.")
    if t.outcome_undetermined:
        notes.append(f"- {s}: {t.outcome_undetermined} of {n_families(t.n)} lack a C1-C3 run that their "
                     "parent-probe outcome depends on: every table counts them as Not determined, "
                     "the taxonomy gives them no label, and the plots hatch them.")
    if not t.stage0.stage0_run:
        notes.append(f"- {s}: Stage 0 (milestone test) not run; taxonomy columns need it.")
    elif t.taxonomy_not_classified:
        notes.append(f"- {s}: {t.taxonomy_not_classified} of {n_families(t.n)} have no five-way label "
                     "(no Stage 0 verdicts, or a C1-C3 run missing); they are in no gap column.")
    m = t.missing
    if m.ungraded_total or m.failed_total:
        notes.append(f"- {s}: {m.ungraded_total} rollouts ungraded (grading failed: `ladder regrade` grades "
                     f"them) and {m.failed_total} jobs failed (the call failed: rerun `ladder probe`); they "
                     "are in no table (see Missing verdicts).")
    return notes


def notes(r: ReportTables) -> list[str]:
    """What the tables leave out or cannot know, per student, and the families no one was graded on."""
    L = [line for s, t in r.students.items() for line in _student_notes(s, t)]
    bad = r.meta.ungradable_reference
    if bad:
        L.append(f"- {n_families(len(bad))} not graded, their reference answer is unusable: "
                 + "; ".join(f"{pid} ({why})" for pid, why in bad.items()) + ".")
    return L + ([""] if L else [])


def missing_verdicts(r: ReportTables) -> list[str]:
    """Rollouts ungraded and jobs failed, per condition; nothing when none is missing."""
    if not any(t.missing.ungraded_total or t.missing.failed_total for t in r.students.values()):
        return []
    cols = [STAGE0, *LADDER.columns]
    rows = [[s, kind] + [getattr(t.missing, kind).get(c, 0) for c in cols] + [getattr(t.missing, f"{kind}_total")]
            for s, t in r.students.items() for kind in ("ungraded", "failed")]
    return ["## Missing verdicts", "", *at(r),
            "Not a verdict on the student, so left out of every table: rollouts whose grading failed "
            "(ungraded) and jobs whose call failed for good (failed), per condition.", "",
            *table(["Model", "Missing"] + [LADDER.label(c) for c in cols] + ["Total"], rows), ""]
