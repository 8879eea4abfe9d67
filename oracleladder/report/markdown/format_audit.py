"""The format audit's table (Table 24) and its warnings: report.md carries it, and `ladder audit format`
prints the same."""

from __future__ import annotations

from collections.abc import Mapping

from ...schemas.conditions import LADDER
from ..tables import BUCKETS, FormatAudit, Truncation
from .cells import NONE, pct, table

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
    """One line per student and condition with more than 10% of its rollouts cut off, in the words of every
    surface (`tables.Truncation.said`)."""
    return [Truncation.of_row(a.table[name]).said(f"{student}, {LADDER.label(name)}", a.max_tokens)
            for student, a in audits.items() for name in a.cut_off]


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
