"""Milestone answers in a student's unaided attempts (Tables 35-37): the records `audit.roadmap` computes."""

from __future__ import annotations

from .base import Frozen


class Share(Frozen):
    """Containment: of ``pairs`` (milestone gold, unaided attempt), the ``hits`` whose attempt holds the gold."""

    hits: int
    pairs: int
    rate: float | None  # None: no pair


class Rates(Frozen):
    """Table 35, one row half: the own rate, the cross-problem control's, and their ratio."""

    own: Share
    control: Share
    ratio: float | None


class SolvedAlone(Frozen):
    """Table 36: own pairs of the milestones the student solves alone (>= 1 of K in Stage 0) and of the others."""

    solved: Share
    not_solved: Share


class Versus(Frozen):
    """Table 37, one length: this set's own rate and a second set's on the same attempts, and their ratio."""

    own: Share
    other: Share
    ratio: float | None


class Against(Frozen):
    families: int  # the families both sets have
    by_length: dict[str, Versus]


class Containment(Frozen):
    """Milestone answers in one student's unaided (C1) attempts (paper Appendix Q, `audit.roadmap`): Table 35
    over all golds and statement-novel ones, Table 36 (None without Stage 0 verdicts), and Table 37: the own
    rate by gold length ("all", "<=25", "<=15"), with ``against`` a second roadmap set's."""

    families: int
    attempts: int
    golds: int
    novel_golds: int
    all: Rates
    novel: Rates
    solved_alone: SolvedAlone | None
    by_length: dict[str, Share]
    against: Against | None = None
