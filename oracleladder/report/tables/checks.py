"""Checks of a gap count: the rubric review of the composition gap (Table 42) and the C3 leak residual
(Appendix S)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ...ladder.outcomes import FamilyResults, Gap, Outcome, known_outcome
from ...schemas.conditions import C3
from ...schemas.rubric import CATEGORIES, RubricLabel
from .base import Frozen, known_gap, ran, share_of


class ReviewRow(Frozen):
    """Table 42, one student: its composition-gap families (strict milestone test) and the automated
    rubric review of them (`ladder audit review`). ``labeled``: those with a label; ``unlabeled``: not
    reviewed, or no readable reply (kept in the category, as the paper keeps them); ``flagged``: labeled
    a verifier or format error (``flagged_share``: of the labeled). ``before`` and ``after``: the
    category's share of the student's families, with the flagged ones and without. ``categories``: the
    labeled families by rubric category; ``categories_unflagged``: the same after removing the flagged."""

    families: int
    gap: int
    labeled: int
    unlabeled: int
    flagged: int
    flagged_share: float | None
    before: float | None
    after: float | None
    categories: dict[str, int]
    categories_unflagged: dict[str, int]


class LeakResidual(Frozen):
    """Appendix S's C3 leak residual, one student: its C3-only (Answers-Needed) solves on families where a
    tested milestone's gold answer restates the parent answer (`validators.family_leak_level`), by leak
    level; ``pids``: those families."""

    c3_only: int
    leaking: int  # of them, on a leaking family
    by_level: dict[str, int]
    pids: list[str]


def review_row(fams: list[FamilyResults], labels: Mapping[str, RubricLabel | None], tau: int = 1) -> ReviewRow:
    """Table 42 of one student's results and its review's labels by pid (None: unreviewed)."""
    gap = [f.pid for f in fams if known_gap(f, tau) is Gap.COMPOSITION]
    got = [label for p in gap if (label := labels.get(p)) is not None]
    flagged = sum(label.flagged for label in got)
    n = len(fams)
    return ReviewRow(
        families=n, gap=len(gap), labeled=len(got), unlabeled=len(gap) - len(got), flagged=flagged,
        flagged_share=share_of(flagged, len(got)), before=share_of(len(gap), n), after=share_of(len(gap) - flagged, n),
        categories={c: sum(label.category == c for label in got) for c in CATEGORIES},
        categories_unflagged={c: sum(label.category == c and not label.flagged for label in got) for c in CATEGORIES})


def leak_residual(fams: list[FamilyResults], leaking: Mapping[str, str], tau: int = 1) -> LeakResidual | None:
    """The leak residual of one student's results, given the set's leaking families (pid -> leak level);
    None where C3 was not run."""
    if not any(ran(f, C3.name) for f in fams):
        return None
    c3_only = [f.pid for f in fams if known_outcome(f, tau) is Outcome.ANSWERS_NEEDED]
    hit = [p for p in c3_only if p in leaking]
    return LeakResidual(c3_only=len(c3_only), leaking=len(hit), pids=hit,
                        by_level=dict(Counter(leaking[p] for p in hit)))
