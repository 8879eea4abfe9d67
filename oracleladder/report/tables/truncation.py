"""Answers cut off by the token budget and answers with nothing to grade, in the words every report, table
and page prints (`Truncation.said`): the format audit's rows read them from the stored finish reasons
(`audit.format`), an imported panel's from what its records said (`PanelTruncation`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...schemas.conditions import LADDER
from .base import Frozen

if TYPE_CHECKING:  # a student's tables hold a PanelTruncation
    from .student import FormatRow

WARN_SHARE = 0.10  # the report warns when more of a condition's answers than this were cut off

# Why an answer gave the grader nothing to read: cut off by its token budget, refused by the provider (a
# content filter), or written without the form asked for (no \boxed{} answer; no primitive in PRIM's fields)
CUT_OFF, REFUSED, NO_BOX = "cut off", "refused", "no box"
WHY = (CUT_OFF, REFUSED, NO_BOX)


class Truncation(Frozen):
    """Of a table's graded answers: how many were cut off by the token budget (read or not), and how
    many had nothing to read, by why (WHY)."""

    answers: int
    cut_off: int
    unreadable: dict[str, int]

    def said(self, what: str, budgets: Sequence[int]) -> str:
        """One line: "Discovery: 4 of 4 answers cut off at --max-tokens 128; 4 unreadable (4 cut off)"."""
        at = "--max-tokens " + ", ".join(map(str, budgets)) if budgets else "the token budget"
        why = ", ".join(f"{n} {w}" for w, n in self.unreadable.items() if n)
        return (f"{what}: {self.cut_off} of {self.answers} answers cut off at {at}; "
                f"{sum(self.unreadable.values())} unreadable" + (f" ({why})" if why else ""))

    @classmethod
    def summed(cls, parts: Iterable[Truncation]) -> Truncation:
        """The Truncation of the answers of every part together."""
        parts = list(parts)
        return cls(answers=sum(t.answers for t in parts), cut_off=sum(t.cut_off for t in parts),
                   unreadable={w: sum(t.unreadable.get(w, 0) for t in parts) for w in WHY})

    @classmethod
    def of_row(cls, row: FormatRow) -> Truncation:
        """A format audit row's: its bucketed answers, those cut off, and those with no box by why."""
        return cls(answers=row.n, cut_off=row.truncated,
                   unreadable={CUT_OFF: row.no_boxed_trunc, REFUSED: row.refused, NO_BOX: row.no_boxed - row.refused})

    @property
    def warns(self) -> bool:
        """Whether a reader must be told: over WARN_SHARE of the answers cut off, or any unreadable."""
        return self.cut_off > WARN_SHARE * self.answers or any(self.unreadable.values())


def said_by_condition(student: str, by: Mapping[str, Truncation], budgets: Sequence[int]) -> list[str]:
    """A line per condition (or "Stage 0") of ``by`` whose answers `Truncation.warns` of, "STUDENT, C1: ..."."""
    return [t.said(f"{student}, {LADDER.label(target)}", budgets) for target, t in by.items() if t.warns]


class PanelTruncation(Frozen):
    """An imported panel's answers cut off and unreadable (counts with no rollout behind them: what its
    records said, by condition, Stage 0's milestones together) and the --max-tokens its file states."""

    max_tokens: list[int]
    by_condition: dict[str, Truncation]

    def warnings(self, student: str) -> list[str]:
        return said_by_condition(student, self.by_condition, self.max_tokens)
