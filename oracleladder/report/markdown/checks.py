"""Checks of a gap count in report.md: the rubric review (Table 42) and the C3 leak residual (Appendix S)."""

from __future__ import annotations

from collections.abc import Mapping

from ...schemas.rubric import CATEGORIES
from ..tables import BudgetChange, LeakResidual, ReportTables, ReviewRow
from .cells import NONE, pct, table


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
