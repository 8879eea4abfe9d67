"""PRIM's problems (§3, App. B.3): a family with a gold primitive, and each dimension's K samples of it.
Generation and Execution are the grader's verdicts, Discovery and Digestion PrimitiveAcc of the judge's
score (a missing score is left out, counted apart; an unreadable primitive is a 0). A problem passes a
dimension with at least ``threshold`` of its samples right (the ladder's τ; 1 of K = 1 is PRIM's), and a
Generation failure has its place: a quadrant of Discovery × Execution (gold). The tables (`analysis`) count
problems."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

from ..schemas import Rollout
from ..store import PrimScore
from .dimensions import DIMENSIONS
from .scoring import QUADRANTS, primitive_acc

# PRIM's row of a family Generation solves, or cannot place; UNKNOWN is also the ladder's label where
# it cannot be known (a rung not run)
SOLVED, UNKNOWN = "solved", "unknown"


@dataclass
class Problem:
    """One problem's samples per dimension (True: right): ``samples`` by dimension name, ``execution`` by
    primitive source (a dimension shown a support is read under the gold primitive)."""

    pid: str
    family: str | None
    samples: dict[str, list[bool]] = field(default_factory=dict)
    execution: dict[str, list[bool]] = field(default_factory=dict)

    def dimension(self, name: str) -> list[bool]:
        if DIMENSIONS[name].shows == "parent+support":
            return self.execution.get("gold", [])
        return self.samples.get(name, [])

    # the dimensions the paper's tables set against each other
    @property
    def generation(self) -> list[bool]:
        return self.dimension("generation")

    @property
    def discovery(self) -> list[bool]:
        return self.dimension("discovery")

    @property
    def digestion(self) -> list[bool]:
        return self.dimension("digestion")


def problems(pids: Mapping[str, str | None], rollouts: Sequence[Rollout], scores: Sequence[PrimScore],
             tau: float, judged_right: Set[tuple[str, str, int]] = frozenset()) -> list[Problem]:
    """Each problem of ``pids`` (pid -> its gold's family) with its samples; an answer is right when
    the grader accepts it, or its (pid, target, k) is in ``judged_right`` (an answer judge's)."""
    out = {pid: Problem(pid, family) for pid, family in pids.items()}
    for r in rollouts:
        p = out.get(r.pid)
        if p is None or not r.verdict.graded:
            continue
        right = r.verdict.accepted or (r.pid, r.target, r.k) in judged_right
        d = DIMENSIONS.by_target(r.target)
        if d is None or d.writes:  # a written primitive counts by its judge's score
            continue
        if d.shows == "parent+support":
            p.execution.setdefault(r.target[len(d.target):], []).append(right)
        else:
            p.samples.setdefault(d.name, []).append(right)
    for s in scores:
        p, d = out.get(s.pid), DIMENSIONS.by_target(s.target)
        if p is not None and s.score is not None and d is not None and d.writes:
            p.samples.setdefault(d.name, []).append(primitive_acc(s.score, tau))
    return list(out.values())


def rate(samples: list[bool]) -> float | None:
    return sum(samples) / len(samples) if samples else None


def passes(samples: list[bool], threshold: int) -> bool | None:
    return sum(samples) >= threshold if samples else None


def failures(ps: Sequence[Problem], threshold: int) -> list[Problem]:
    """The problems Generation fails (probed, fewer than ``threshold`` right)."""
    return [p for p in ps if passes(p.generation, threshold) is False]


def quadrant_of(p: Problem, threshold: int) -> str:
    """PRIM's place of a problem: solved (Generation passes), a quadrant of a Generation failure, or
    unknown (Generation, Discovery or Execution under gold without a verdict)."""
    g = passes(p.generation, threshold)
    if g:
        return SOLVED
    d, e = passes(p.discovery, threshold), passes(p.execution.get("gold", []), threshold)
    if g is None or d is None or e is None:
        return UNKNOWN
    return QUADRANTS[(d, e)]
