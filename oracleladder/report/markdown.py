"""Markdown: the helpers every table of the toolkit is written with (`table`, `pct`, `num`), and report.md,
one function per table, from the typed tables (`tables.ReportTables`).

The format audit's table is here too: report.md carries it, and `ladder audit format` prints the same."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..ladder.outcomes import NOT_DETERMINED, Gap, Outcome
from ..schemas.conditions import LADDER
from ..schemas.rubric import CATEGORIES
from .palette import NOT_CLASSIFIED, n_families
from .stats import Interval, Transitions
from .tables import (
    ANY_PROBE,
    BUCKETS,
    NOT_RUN,
    STAGE0,
    BudgetChange,
    Containment,
    FormatAudit,
    LeakResidual,
    QFamily,
    ReportTables,
    ReviewRow,
    Share,
    StudentReport,
)

NONE = "—"  # a cell with no value (a statistic of nothing)


# ---------------------------------------------------------------- helpers

def table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table: its header, the rule under it, one line per row (cells as str())."""
    return (["| " + " | ".join(str(c) for c in header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def pct(x: float | None, of: float | None = None, digits: int = 1) -> str:
    """``x`` as a percentage: a share, or with ``of`` a count of that many (100 * x / of, rounded once);
    NOT_RUN for None."""
    if x is None:
        return NOT_RUN
    return f"{(100 * x if of is None else 100 * x / of):.{digits}f}%"


def num(x: float | None, fmt: str = "{:.1f}") -> str:
    """A number by ``fmt``; NONE for None."""
    return NONE if x is None else fmt.format(x)


def p_value(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.1e}"


# ---------------------------------------------------------------- the format audit (Table 24)

def constrained(formats: Mapping[str, FormatAudit]) -> str:
    """A sentence naming the students whose answers a grammar constrained (it changes what they can
    answer), or ""."""
    names = [s for s, a in formats.items() if a.grammars]
    return (f" Decoding constrained by a grammar (GBNF, the request field `grammar`): {', '.join(names)}; "
            "it changes what the student can answer." if names else "")


def budget(audit: FormatAudit) -> str:
    """The --max-tokens of the runs that made the audited rollouts."""
    m = audit.max_tokens
    return "--max-tokens " + ", ".join(map(str, m)) if m else "--max-tokens unknown (no probe run config)"


def cut_off_warnings(audits: Mapping[str, FormatAudit]) -> list[str]:
    """One line per student and condition with more than 10% of its rollouts cut off."""
    out = []
    for student, a in audits.items():
        for name in a.cut_off:
            row = a.table[name]
            out.append(f"{student}, {LADDER.label(name)}: {row.truncated} of {row.n} "
                       f"rollouts ({pct(row.truncated, row.n)}) were cut off at {budget(a)} "
                       f"(finish reason length); {row.no_boxed_trunc} of them have no boxed answer and "
                       "count as wrong. Rerun with a larger --max-tokens.")
    return out


def format_audit(audits: Mapping[str, FormatAudit]) -> list[str]:
    """The format audit in Table 24's layout: shares of the bucketed rollouts, counts beside."""
    L = ["## Format audit (Table 24)", "",
         "Each graded rollout in one bucket, as a share of the condition's rollouts (count in brackets). "
         "no_boxed_trunc: no boxed answer and the answer hit the token budget (stored finish reason). "
         "Cut off: rollouts that hit the budget, boxed or not. Ungraded rollouts and failed jobs are no "
         "verdict and are counted apart.", ""]
    rows = []
    for student, a in audits.items():
        for name, row in a.table.items():
            counts = [getattr(row, b) for b in BUCKETS]
            rows.append([student, LADDER.label(name), row.n]
                        + [f"{pct(c, row.n)} ({c})" if row.n else NONE for c in counts]
                        + [row.truncated, row.ungraded, row.failed])
    header = ["Model", "Condition", "n", *BUCKETS, "Cut off", "Ungraded", "Failed jobs"]
    L += table(header, rows) if rows else ["No rollouts."]
    L += [""] + [f"{s}: {budget(a)}." for s, a in audits.items()] + [""]
    return L


# ---------------------------------------------------------------- report.md

def _formats(r: ReportTables) -> dict[str, FormatAudit]:
    return {s: t.format for s, t in r.students.items() if t.format is not None}


def header(r: ReportTables) -> list[str]:
    """Title, what was counted and how, and a warning per condition whose answers were cut off."""
    meta, formats = r.meta, _formats(r)
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
    cut = cut_off_warnings(formats)
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


def leak_rule(r: ReportTables) -> list[str]:
    """The milestones the leak rule dropped; nothing when it dropped none."""
    rule = r.leak_rule
    if rule is None or not rule.dropped:
        return []
    kept = (f" Probed with them kept (--keep-leaking): {', '.join(rule.kept_by)}; their Stage 0 and C2/C3 "
            "include them." if rule.kept_by else "")
    return ["## Leak rule", "",
            f"{len(rule.dropped)} milestones restate the reference answer (the verifier accepts their gold as it: "
            "Appendix N, P.1) and are in no Stage 0, C2 or C3 prompt." + kept, "",
            *table(["Family", "Milestone", "Gold"], [[d.pid, d.target, d.gold] for d in rule.dropped]), ""]


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


def summary(r: ReportTables) -> list[str]:
    """Table 1."""
    rows = [[s, t.n, pct(m.direct_accuracy), pct(m.solved_directly_share), pct(m.solved_with_primitive_share),
             pct(m.solved_any_share), pct(m.added_by_milestones_share), pct(m.math_score)]
            for s, t in r.students.items() for m in (t.summary,)]
    return ["## Same-set summary (Table 1)", "", *at(r),
            *table(["Model", "Families", "Direct accuracy", "Solved directly", "Primitive-Needed",
                    "Solved by any probe", "Added by milestones", "MATH score"], rows),
            "", "Direct accuracy is per-rollout C1 success; the other shares are family-level at "
            f">= {r.meta.tau} of K. Solved by any probe = Direct + Primitive-Needed (where C2-primitive was run) + "
            "Roadmap-Needed + Answers-Needed. "
            + (f"MATH score: pass@1 of the plain benchmark probe '{r.meta.benchmark}' (`ladder benchmark`) at the "
               "same settings." if r.meta.benchmark else "MATH score: an external comparator, a plain benchmark "
               "probe with no roadmap (`ladder benchmark`, then `ladder report --benchmark NAME`)."), ""]


def conditions(r: ReportTables) -> list[str]:
    """Table 21: families solved per condition, then each condition's per-rollout success rate."""
    rows, columns = [], LADDER.columns
    for s, t in r.students.items():
        cells = []
        for c in columns:
            v = t.conditions[c]
            cells.append(NOT_RUN if v is None else (f"{v.solved}" if v.families_run == t.n
                                                    else f"{v.solved} (of {v.families_run} run)"))
        any_run = any(t.conditions[c] is not None for c in LADDER.parent_probes)
        rows.append([s] + cells + [t.summary.solved_any if any_run else NOT_RUN])
    rates = [[s] + [NOT_RUN if (v := t.conditions[c]) is None else f"{v.per_rollout_rate:.3f}" for c in columns]
             for s, t in r.students.items()]
    names = [LADDER[c].short for c in columns]
    return [f"## Families solved per condition (Table 21, >= {r.meta.tau} of K)", "", *at(r),
            *table(["Model"] + names + ["Any probe"], rows),
            "", "Per-rollout success rate (sr):", "", *table(["Model"] + names, rates), ""]


def taxonomy(r: ReportTables) -> list[str]:
    """Table 16 with the milestone-test statistics beside it, then the taxonomy under the fraction test."""
    cols = [g.value for g in Gap]  # the Primitive-gap column says "not run" where C2-primitive was not
    unlabeled = any(t.taxonomy_not_classified and t.stage0.stage0_run for t in r.students.values())
    rows = []
    for s, t in r.students.items():
        s0 = t.stage0
        extra = [t.taxonomy_not_classified] if unlabeled else []
        if not s0.stage0_run:
            rows.append([s] + [t.taxonomy["Direct"]] + [NOT_RUN] * (len(cols) - 1 + len(extra)) + [NOT_RUN] * 4)
            continue
        rows.append([s] + [t.taxonomy.get(c, NOT_RUN) for c in cols] + extra
                    + [s0.pass_strict, s0.pass_fraction, f"{s0.mean_tested_milestones:.2f}",
                       f"{pct(s0.milestone_solve_rate)} ({s0.milestones_solved}/{s0.milestones_tested})"])
    fraction = [[s] + ([t.taxonomy_fraction.get(c, NOT_RUN) for c in cols] if t.stage0.stage0_run else
                       [t.taxonomy_fraction["Direct"]] + [NOT_RUN] * (len(cols) - 1)) for s, t in r.students.items()]
    return [f"## Reasoning-gap taxonomy (Table 16, strict milestone test, tau = {r.meta.tau})", "", *at(r),
            *table(["Model"] + cols + ([NOT_CLASSIFIED] if unlabeled else [])
                   + ["MS-test pass (strict)", "MS-test pass (fraction)",
                      "Tested milestones / family", "Milestone solve rate"], rows),
            "", "Strict: every tested milestone solved >= 1 of K alone. Fraction: at least half of them. "
            "Milestone solve rate: tested milestones solved >= 1 of K, over all tested milestones.", "",
            "Taxonomy under the fraction milestone test (secondary readout):", "",
            *table(["Model"] + cols, fraction), ""]


def _outcome_columns(counts: Iterable[Mapping[str, object]]) -> list[str]:
    """Every outcome, and "Not determined" where some count has it."""
    return [o.value for o in Outcome] + ([NOT_DETERMINED] if any(NOT_DETERMINED in c for c in counts) else [])


def threshold_sweep(r: ReportTables) -> list[str]:
    """Table 9, one table per student."""
    L = ["## Threshold sweep (Table 9)", "", *at(r)]
    for s, t in r.students.items():
        L += [f"**{s}** (n = {t.n})", ""]
        cols = _outcome_columns(t.threshold_sweep.values())
        L += table(["tau"] + cols,
                   [[tau + (" (default)" if tau == "1" else "")] + [row.get(o, NOT_RUN) for o in cols]
                    for tau, row in t.threshold_sweep.items()])
        L.append("")
    return L


def q_family(f: QFamily | None) -> str:
    """The one sentence naming the family the q-values were adjusted over."""
    if f is None:
        return "(no planned contrast was run)"
    return (f"over the {f.tests} planned test{'s' if f.tests != 1 else ''} of {f.students} "
            f"student{'s' if f.students != 1 else ''} together (every planned contrast that was run)")


def contrasts(r: ReportTables) -> list[str]:
    """Tables 11 (the planned contrasts) and 10 (each condition against direct prompting)."""
    cells = {s: [NOT_RUN if c.status == NOT_RUN else
                 f"{c.delta:+d} ({c.only_a}/{c.only_b}), p = {p_value(c.p_value)}, n = {c.n}" for c in t.contrasts]
             for s, t in r.students.items()}
    # every student has the same contrasts in the same order (`tables.contrasts`): the first one's name them
    declared = ([(c.contrast, c.planned) for c in next(iter(r.students.values())).contrasts] if r.students
                else [(name, p) for name, _, _, p in LADDER.contrasts])
    planned = [name for name, p in declared if p]
    adjusted = [[s] + [NOT_RUN if c.p_bh is None else p_value(c.p_bh) for c in t.contrasts if c.planned]
                for s, t in r.students.items()]

    def part(planned: bool) -> list[str]:
        pick = [i for i, (_, p) in enumerate(declared) if p == planned]
        return table(["Model"] + [declared[i][0] for i in pick], [[s] + [row[i] for i in pick] for s, row in cells.items()])

    return ["## Specificity contrasts, paired exact McNemar (Tables 10-11)", "", *at(r),
            "Each cell: Delta = families the first condition solves and the second does not, minus the reverse; "
            "two-sided exact p (binomial on discordant pairs); n = families where both were run.", "",
            "Planned contrasts (Table 11):", "", *part(True),
            "", f"Benjamini-Hochberg adjusted p (q) {q_family(r.meta.bh_family)}:", "",
            *table(["Model"] + planned, adjusted),
            "", "Each condition against direct prompting (Table 10):", "", *part(False), ""]


def _fingerprint(counts: Mapping[str, int]) -> str:
    return "/".join(str(counts[o]) for o in _outcome_columns([counts]) if o in counts)


def stage0_fingerprint(r: ReportTables) -> list[str]:
    """Table 14: milestone solve rate, families passing the strict milestone test, and the outcome fingerprint
    of all families and of the passing ones."""
    rows = [[s, NOT_RUN, NOT_RUN, _fingerprint(t.outcomes), NOT_RUN] if t.fingerprint_passing is None else
            [s, pct(t.stage0.milestone_solve_rate), t.stage0.pass_strict, _fingerprint(t.outcomes),
             _fingerprint(t.fingerprint_passing)] for s, t in r.students.items()]
    order = "/".join(o for o in _outcome_columns(t.outcomes for t in r.students.values())
                     if any(o in t.outcomes for t in r.students.values()))
    return [f"## Stage 0 milestone solvability and fingerprint (Table 14, tau = {r.meta.tau})", "", *at(r),
            *table(["Model", "Milestone solve rate", "Passing families", "All families", "Passing families only"],
                   rows),
            "", f"Fingerprint cells: {order}. Passing: every tested milestone solved >= 1 of K alone (strict).", ""]


def recovery_by_tau(r: ReportTables) -> list[str]:
    """Table 28: per student, families each condition recovers at each tau."""
    L = ["## Family-level recovery per condition as tau varies (Table 28)", "", *at(r),
         "Families with at least tau correct of K under the condition (tau = 1 is pass@K).", ""]
    for s, t in r.students.items():
        taus = list(next((v for v in t.recovery_by_tau.values() if v), {}))
        rows = [[LADDER[c].short] + ([NOT_RUN] * len(taus) if (v := t.recovery_by_tau.get(c)) is None
                                        else [v[x] for x in taus]) for c in LADDER.columns]
        L += [f"**{s}** (n = {t.n})", ""] + (table(["Condition"] + [f"tau = {x}" for x in taus], rows) if taus
                                              else ["No condition was run."]) + [""]
    return L


def milestone_types(r: ReportTables) -> list[str]:
    """Tables 7 and 48 of the set, Table 8 per student; one line where the set's families were not given."""
    m = r.milestone_types
    if m is None:
        return ["Tables 7, 8 and 48 (milestone types and answer schemas) read a roadmap set's milestones; none were "
                "given (a code set has none).", ""]
    if not m.milestones:
        return [f"Tables 7, 8 and 48 (milestone types and answer schemas): the set ({n_families(m.families)}) has no "
                "milestone.", ""]
    L = [f"## Milestone types of the set (Table 7: {m.milestones} tested milestones of {n_families(m.families)})", "",
         *table(["Type", "Milestones", "%"], [[t, c, pct(c, m.milestones)] for t, c in m.types.items()]), ""]
    L += [f"## Milestone types by outcome state (Table 8, tau = {r.meta.tau})", "", *at(r),
          "Each cell: share of the families in that state with at least one tested milestone of the type "
          "(a family counts in several columns).", ""]
    for s, by in r.types_by_outcome.items():
        L += [f"**{s}**", "", *table(["State", "n", *m.types],
                                     [[o, x.n] + [pct(c, x.n, 0) if x.n else NONE for c in x.with_type.values()]
                                      for o, x in by.items()]), ""]
    if m.schemas is None:
        return L + [f"Table 48 (answer schemas): none of the set's {m.answers} milestones states its answer "
                    "schema (released families do not; compiled ones do).", ""]
    rows = [[a, c, pct(c, m.answers)] for a, c in m.schemas.items()] + (
        [["not stated", m.schema_unknown, pct(m.schema_unknown, m.answers)]] if m.schema_unknown else [])
    return L + [f"## Answer schemas of the set (Table 48: all {m.answers} milestones)", "",
                *table(["Schema", "Milestones", "%"], rows), ""]


def budgets(r: ReportTables) -> list[str]:
    """Tables 22 and 15: each student probed at two --max-tokens; one line where none was."""
    if not r.budgets:
        return ["Tables 15 and 22 (Stage 0 and outcomes at two budgets) need a student read at two --max-tokens "
                "side by side (`--by-run`).", ""]
    keys = list(next(iter(r.budgets.values())).outcomes_low)
    rows22, rows15 = [], []
    for s, b in r.budgets.items():
        rows22.append([s, b.n_common] + [b.outcomes_low[k] for k in keys] + [b.outcomes_high[k] for k in keys])
        rows15.append([s] + ([NOT_RUN] * 5 if b.pass_low is None else
                             [b.pass_low, b.pass_high, b.pass_flipped, b.composition_low, b.composition_high]))
    spell = "; ".join(f"{s}: {b.max_tokens[0]} against {b.max_tokens[1]}" for s, b in r.budgets.items())
    low, high = "lower", "higher"  # each student's two budgets are named in the line above the table
    moves = []
    for s, b in r.budgets.items():
        m = b.transitions
        moves += [f"Outcome transitions of {s} from max_tokens {b.max_tokens[0]} (rows) to {b.max_tokens[1]} "
                  "(columns):", "", *at(r, (b.low, b.high)),
                  *_transitions(m, str(b.max_tokens[0]), str(b.max_tokens[1])), "",
                  f"Same outcome: {m.same} of {m.n}.", ""]
    return [f"## Outcomes at two budgets (Table 22, tau = {r.meta.tau})", "", *at(r), f"max_tokens: {spell}.", "",
            *table(["Model", "Common families"] + [f"{k} ({low})" for k in keys] + [f"{k} ({high})" for k in keys],
                   rows22), "", *moves,
            "## Stage 0 at two budgets (Table 15)", "", *at(r),
            *table(["Model", f"Pass ({low})", f"Pass ({high})", "Pass flipped", f"Comp. gap ({low})",
                    f"Comp. gap ({high})"], rows15), "",
            "Pass: families passing the strict milestone test; flipped: those passing at one budget only; "
            "Comp. gap: families passing it that no parent probe recovers. On the families both budgets have.", ""]


def share(x: Share) -> str:
    """A containment share with its counts: "60.0% (6/10)"."""
    return NONE if x.rate is None else f"{pct(x.rate)} ({x.hits}/{x.pairs})"


def solved_alone(results: Mapping[str, Containment], above: Sequence[str] = ()) -> list[str]:
    """Table 36 of the students with Stage 0 verdicts (``above``: the lines under its title); one line for
    each other."""
    alone = {s: r.solved_alone for s, r in results.items() if r.solved_alone is not None}
    L = ["## By whether the student solves the milestone alone (Table 36)", "", *above,
         "Own pairs (milestone gold, unaided C1 attempt), split by the milestone's Stage 0 result (solved alone: "
         ">= 1 of K accepted).", "",
         *table(["Model", "Solved alone", "Not solved alone"],
                [[s, share(a.solved), share(a.not_solved)] for s, a in alone.items()]), ""] if alone else []
    lacking = [f"- {s}: Table 36 not available: no Stage 0 verdicts on these families." for s in results
               if s not in alone]
    return L + lacking + ([""] if lacking else [])


def _length(key: str) -> str:
    return "All lengths" if key == "all" else f"<= {key.removeprefix('<=')} characters"


def by_length(results: Mapping[str, Containment], above: Sequence[str] = ()) -> list[str]:
    """Table 37: each student's own rate by gold length, and with a second roadmap set (``against``) the ratio of
    this set's rate to that set's."""
    keys = list(next(iter(results.values())).by_length)
    L = ["## By gold length (Table 37)", "", *above, "Own pairs whose gold has at most that many characters.", "",
         *table(["Model", *map(_length, keys)],
                [[s] + [share(r.by_length[k]) for k in keys] for s, r in results.items()]), ""]
    versus = {s: r.against for s, r in results.items() if r.against is not None}
    if versus:
        L += ["Own rate of this set's golds over the other set's, on the same attempts of the families both have:", "",
              *table(["Model", "Families", *map(_length, keys)],
                     [[s, v.families] + [num(v.by_length[k].ratio, "{:.2f}") for k in keys]
                      for s, v in versus.items()]),
              ""]
    return L


def containment(r: ReportTables) -> list[str]:
    """Tables 36 and 37 of the students with unaided attempts to read; one line for the others."""
    have = {s: t.containment for s, t in r.students.items() if t.containment is not None}
    lacking = [s for s in r.students if s not in have]
    L = [f"Tables 36 and 37 (milestone answers in the unaided attempts) not available for {', '.join(lacking)}: "
         "they read the text of C1 attempts on a math roadmap set, and there is none (an imported panel, C1 not "
         "run, or a code set).", ""] if lacking else []
    return L + (solved_alone(have, at(r, list(have))) + by_length(have, at(r, list(have))) if have else [])


def _interval(i: Interval) -> str:
    return f"{pct(i.point)} [{100 * i.lo:.1f}, {100 * i.hi:.1f}]"


def bootstrap(r: ReportTables) -> list[str]:
    """Table 12: shares with their intervals, then the paper's count form (direct and any-probe counts) with
    the any-probe rank interval where there are two or more students."""
    keys = _outcome_columns(t.bootstrap for t in r.students.values()) + [ANY_PROBE] + [g.value for g in Gap if g is not Gap.DIRECT]
    rows = [[s] + [_interval(t.bootstrap[k]) if k in t.bootstrap else (NOT_RUN if t.bootstrap else NONE)
                   for k in keys] for s, t in r.students.items()]

    def count(t: StudentReport, key: str) -> str:
        i = t.bootstrap.get(key)
        return NONE if i is None else f"{i.point * t.n:.1f} [{i.lo * t.n:.0f}, {i.hi * t.n:.0f}]"

    def rank(s: str) -> str:
        x = r.ranks.get(s)
        return NONE if x is None else f"{x.any_probe.point} [{x.any_probe.lo}, {x.any_probe.hi}]"
    counts = [[s, t.n, count(t, Outcome.DIRECT.value), count(t, ANY_PROBE)] + ([rank(s)] if r.ranks else [])
              for s, t in r.students.items()]
    n_common = next(iter(r.ranks.values())).n_common if r.ranks else 0
    ranked = (f"Any-probe rank: 1 is the most families solved by any probe (ties share the better rank), on the "
              f"{n_families(n_common)} every model has, with its [2.5, 97.5] percentile range over the same resamples."
              if r.ranks else "Any-probe rank: needs two or more students with common families.")
    return [f"## Family-level bootstrap CIs (Table 12: {r.meta.n_resamples} resamples, seed {r.meta.seed})", "",
            *at(r), "Share of families: point estimate [2.5%, 97.5%] percentile interval.", "",
            *table(["Model"] + keys, rows), "", "Counts (families): point [2.5, 97.5] percentile interval.", "",
            *table(["Model", "Families", "Direct", "Any probe"] + (["Any-probe rank"] if r.ranks else []), counts),
            "", ranked, ""]


def _transitions(m: Transitions, sa: str, sb: str) -> list[str]:
    rows = [[lab] + [m.counts[lab][c] for c in m.labels] + [m.row_totals[lab]] for lab in m.labels]
    rows.append(["Column total"] + [m.col_totals[c] for c in m.labels] + [m.n])
    return table([f"{sa} \\ {sb}"] + m.labels + ["Row total"], rows)


def _base_pairs(r: ReportTables) -> list[tuple[str, str]]:
    base = r.meta.base
    return [(base, s) for s in r.students if base is not None and s != base]


def _oriented(r: ReportTables, a: str, b: str) -> tuple[Transitions, Transitions | None, int]:
    """The transitions of a pair read from ``a`` to ``b`` (a pair is stored in column order)."""
    try:
        p = r.pair(a, b)
        return p.outcome_transitions, p.gap_transitions, p.n_common
    except KeyError:
        p = r.pair(b, a)
        return (_flip(p.outcome_transitions), None if p.gap_transitions is None else _flip(p.gap_transitions),
                p.n_common)


def _flip(m: Transitions) -> Transitions:
    counts = {x: {y: m.counts[y][x] for y in m.labels} for x in m.labels}
    return m.model_copy(update={"counts": counts, "row_totals": m.col_totals, "col_totals": m.row_totals})


def transitions(r: ReportTables) -> list[str]:
    """Table 38: the base's outcomes and five-way labels against each other student's, on common families."""
    L: list[str] = []
    for sa, sb in _base_pairs(r):
        om, gm, n = _oriented(r, sa, sb)
        L += [f"## Outcome transitions {sa} -> {sb} (Table 38, {n} common families)", "", *at(r, (sa, sb)),
              *_transitions(om, sa, sb), "", f"Same outcome: {om.same} of {om.n}.", ""]
        if gm is None:
            missing = " and ".join(x for x in (sa, sb) if not r.students[x].stage0.stage0_run) or "one of them"
            L += [f"Taxonomy transitions {sa} -> {sb}: not run (Stage 0 is missing for {missing} "
                  "on the common families).", ""]
        else:
            L += [f"Taxonomy transitions {sa} -> {sb}:", "", *_transitions(gm, sa, sb),
                  "", f"Same label: {gm.same} of {gm.n}.", ""]
    return L


def change(r: ReportTables) -> list[str]:
    """Table 18: each student's outcome counts against the base's, on their common families."""
    base = r.meta.base
    if not r.changes or base is None:
        return []
    keys = list(next(iter(r.changes.values())).base)
    first = next(iter(r.changes.values()))
    rows = [[f"{base} (base)", first.n_common] + [first.base[k] for k in keys]]
    rows += [[s, c.n_common] + [f"{c.counts[k]} ({c.delta[k]:+d})" for k in keys] for s, c in r.changes.items()]
    return [f"## Change against {base} (Table 18, tau = {r.meta.tau})", "", *at(r),
            "Families per outcome on the families each student shares with the base, and the change from the base "
            "(in brackets); the base row is on its common families with the first student.", "",
            *table(["Model", "Common families"] + keys, rows), ""]


def ordering(r: ReportTables) -> list[str]:
    """Table 13 for every pair, and the paired McNemar on each pair's any-probe solves."""
    names = list(r.students)
    oa = r.pairs[0].order_any_probe

    def f(x: float | None) -> str:
        return num(x, "{:.3f}")

    def cell(a: str, b: str, key: str) -> str:
        if a == b:
            return NONE
        try:
            return f(getattr(r.pair(a, b), key).a_gt_b)
        except KeyError:
            return f(getattr(r.pair(b, a), key).b_gt_a)

    def matrix(title: str, key: str) -> list[str]:
        return table([title] + names, [[a] + [cell(a, b, key) for b in names] for a in names])
    tests = [f"- {p.a} vs {p.b}: {p.mcnemar_any_probe.only_a} only {p.a}, {p.mcnemar_any_probe.only_b} only {p.b}, "
             f"p = {p_value(p.mcnemar_any_probe.p_value)} ({p.n_common} common families)." for p in r.pairs]
    return [f"## Bootstrap pairwise ordering (Table 13: {oa.n_resamples} paired family resamples, seed {oa.seed})",
            "", *at(r), "Fraction of resamples where the row model's count exceeds the column model's, on the "
            "families both have (ties count for neither).", "",
            *matrix("Any-probe count", "order_any_probe"), "", *matrix("Direct count", "order_direct"), "",
            "Paired exact McNemar on any-probe solves:", "", *tests, ""]


def review_table(rows: Mapping[str, ReviewRow]) -> list[str]:
    """Table 42: each student's composition-gap families, those the review flags as a verifier or format
    error, and the category's share of the student's families before and after removing them; then the
    rubric categories of the labeled families, all / unflagged."""
    main = table(["Model", "Composition-gap", "Labeled", "Unlabeled", "Flagged", "Flagged %", "Before", "After"],
                 [[s, w.gap, w.labeled, w.unlabeled, w.flagged, pct(w.flagged_share), pct(w.before), pct(w.after)]
                  for s, w in rows.items()])
    cats = table(["Model", *CATEGORIES], [[s, *(f"{w.categories[c]} / {w.categories_unflagged[c]}" for c in CATEGORIES)]
                                          for s, w in rows.items()])
    return ["Flagged: labeled a verifier or format error; Flagged % is of the labeled families. Before and After: "
            "the composition gap's share of the model's families with the flagged ones and without; an unlabeled "
            "family (not reviewed, or no readable reply) stays in the category.", "", *main, "",
            "Rubric categories of the labeled families (all / after removing the flagged ones):", "", *cats, ""]


def review(r: ReportTables) -> list[str]:
    title = "## Automated rubric review of the composition gap (Table 42)"
    if r.review is None:
        return [title, "", "Not run: `ladder audit review` labels each composition-gap family.", ""]
    return [title, "", *review_table(r.review), *review_at_budgets(r.review, r.budgets)]


def review_at_budgets(rows: Mapping[str, ReviewRow], budgets: Mapping[str, BudgetChange]) -> list[str]:
    """Table 42's two budgets side by side, for each student read at two --max-tokens with a review at both
    (its labels are the student's, so each budget reads the same label of a family, as the paper carries its
    4K labels to its 16K sets); nothing where there is none."""
    both = {s: b for s, b in budgets.items() if b.low in rows and b.high in rows}
    if not both:
        return []
    body = [[s, f"{b.max_tokens[0]} / {b.max_tokens[1]}", lo.labeled, lo.flagged, pct(lo.flagged_share),
             pct(lo.before), pct(lo.after), pct(hi.before), pct(hi.after), hi.unlabeled]
            for s, b in both.items() for lo, hi in [(rows[b.low], rows[b.high])]]
    return [("At two budgets (max_tokens lower / higher): the families labeled and flagged at the lower, and the "
             "composition gap's share before and after removing the flagged families at each; unlabeled at the "
             "higher: its gap families without a label, kept in the category."), "",
            *table(["Model", "max_tokens", "Labeled (lower)", "Flagged", "Flagged %", "Before (lower)",
                    "After (lower)", "Before (higher)", "After (higher)", "Unlabeled (higher)"], body), ""]


def leak_residual(r: ReportTables) -> list[str]:
    """Appendix S's C3 leak residual: per student, the C3-only solves on families whose milestone gold
    restates the parent answer."""
    title = "## C3 leak residual (Appendix S)"
    if not r.leak_residual:
        return [title, "", "Not available: no student with C3 results on a math roadmap set.", ""]
    without = [s for s in r.students if s not in r.leak_residual]

    def levels(w: LeakResidual) -> str:
        return ", ".join(f"{lv} {n}" for lv, n in sorted(w.by_level.items())) or NONE
    return [title, "", "C3-only (Answers-Needed) families on which a tested milestone's gold answer restates the "
            "parent answer (strict, trivial reformatting, or verifier-equivalent): solved only because C3 gives the "
            "answer away.", "",
            *table(["Model", "Answers-Needed", "On a leaking family", "By leak level", "Families"],
                   [[s, w.c3_only, w.leaking, levels(w), ", ".join(w.pids) or NONE]
                    for s, w in r.leak_residual.items()]),
            "", f"Across the panel: {sum(w.leaking for w in r.leak_residual.values())} C3-only solves on leaking "
            "families." + (f" Not available for {', '.join(without)}: C3 not run." if without else ""), ""]


PLOTS = ["## Plots", "",
         "- `taxonomy.png`: reasoning-gap taxonomy per student (Figure 4), stacked bottom to top in the order "
         "of the taxonomy table above.",
         "- `fingerprint.png`: parent-probe outcome fingerprint per student (Figure 8), left to right Direct, "
         "Roadmap-Needed, Answers-Needed, Unrecovered.",
         "- `specificity.png`: families solved under direct prompting, the controls and the matched help, one bar "
         "per student (Figures 3a, 6).",
         "- `accuracy.png`: per-rollout direct accuracy against the share solved by any probe, one point per "
         "student (Figure 3b).",
         "- `change.png` and `trajectory.png` (two or more students): each student's change in outcome counts "
         "against the base (Figure 5), and the outcome counts across the students as checkpoints in `--order` "
         "(Figure 7).", "",
         "Bars are shares of each student's families; the numbers in the segments are family counts (segments "
         "under 4.5% carry none: read them in the tables). Direct has the same grey in both plots, and a gap of "
         "a family that passes the milestone test has the colour of its outcome (Roadmap-gap and Roadmap-Needed "
         "blue, Milestone-execution-gap and Answers-Needed green, Composition-gap and Unrecovered red); the two "
         "gaps of failing families are dark. A hatched segment holds families a missing run leaves without a "
         "label (Stage 0 or a C1-C3 rung not run); it is never drawn as zero.", ""]


def report_md(r: ReportTables) -> str:
    """report.md: its tables in the paper's order (Tables 13, 18 and 38 for two or more students)."""
    formats = _formats(r)
    L = header(r) + notes(r) + leak_rule(r) + missing_verdicts(r) + (format_audit(formats) if formats else [])
    L += summary(r) + conditions(r) + taxonomy(r) + stage0_fingerprint(r) + threshold_sweep(r) + recovery_by_tau(r)
    L += review(r) + leak_residual(r) + contrasts(r) + bootstrap(r) + milestone_types(r) + budgets(r) + containment(r)
    if r.pairs:
        L += change(r) + transitions(r) + ordering(r)
    else:
        L += ["Tables 13, 18 and 38 (pairwise ordering, change against a base, transitions) need two or more "
              "students.", ""]
    return "\n".join(L + PLOTS)
