"""Why a graded answer gave the grader nothing to read, and how many of a table's answers were cut off by
their token budget (`Truncation`): the one count, and the one sentence, that every surface warns with
(report.md, the HTML banner, `ladder audit format`, PRIM's report, the panels' export and import): the
format audit's rows read them from the stored finish reasons, an imported panel's from what its records
said (`PanelTruncation`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ...schemas.calls import TRUNCATED
from ...schemas.conditions import LADDER
from ...schemas.models import Rollout
from .base import Frozen

WARN_SHARE = 0.10  # the report warns when more of a condition's rollouts than this were cut off

# Why an answer gave the grader nothing to read, in the words every report, table and page prints:
# cut off by its token budget, refused by the provider (a content filter), or written without the form
# asked for (no \boxed{} answer; no primitive in PRIM's fields)
CUT_OFF, REFUSED, NO_BOX = "cut off", "refused", "no box"
WHY = (CUT_OFF, REFUSED, NO_BOX)
REFUSALS = ("content_filter", "refusal")  # finish reasons of a reply the provider refused (OpenAI's, Anthropic's)
UNREAD = ("no boxed", "unreadable")  # the verdict reasons of an answer with nothing to grade (verifier, PRIM)


def why_unreadable(rollout: Rollout, finish: str | None) -> str | None:
    """Why a graded answer had nothing to read (one of WHY), from its verdict and its call's finish reason;
    None where it was read (right or wrong) or never graded."""
    v = rollout.verdict
    if not v.graded or v.accepted or v.reason not in UNREAD:
        return None
    return REFUSED if finish in REFUSALS else CUT_OFF if finish in TRUNCATED else NO_BOX


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

    @property
    def warns(self) -> bool:
        """Whether a reader must be told: over WARN_SHARE of the answers cut off, or any unreadable."""
        return self.cut_off > WARN_SHARE * self.answers or any(self.unreadable.values())


def truncation(rollouts: Iterable[Rollout], finish: Mapping[str, str | None]) -> Truncation:
    """The Truncation of graded ``rollouts``, ``finish`` mapping a call key to its stored finish reason."""
    graded = [r for r in rollouts if r.verdict.graded]
    why = Counter(w for r in graded if (w := why_unreadable(r, finish.get(r.call_key))) is not None)
    return Truncation(answers=len(graded), cut_off=sum(finish.get(r.call_key) in TRUNCATED for r in graded),
                      unreadable={w: why[w] for w in WHY})


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
