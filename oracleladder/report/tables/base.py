"""What every table shares: the report's constants, `Frozen` (a computed table), and the predicates on
one family's results (a condition run, Stage 0 run, solved by any probe, its five-way label)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ...ladder.outcomes import FamilyResults, Gap, Outcome, classify, known_outcome, parent_outcome
from ...schemas.conditions import C2P
from ..palette import NOT_CLASSIFIED

SEED = 42
N_RESAMPLES = 1000
TAUS = (1, 2, 3, 4, 5)
NOT_RUN = "not run"
STAGE0 = "Stage 0"  # the milestones' verdicts together, where a table has one row per condition
# the format audit's buckets, each rollout in one (audit.format)
BUCKETS = ("no_boxed", "no_boxed_trunc", "unparsable", "parsed_wrong", "parsed_correct")
ANY_PROBE = "Any probe"


class Frozen(BaseModel):
    """A computed table: a value, never changed after it is made."""

    model_config = ConfigDict(frozen=True)


def ran(f: FamilyResults, cond: str) -> bool:
    return bool(f.ladder.get(cond))


def stage0_ran(f: FamilyResults) -> bool:
    return any(f.stage0.values())


def any_probe(fams: Sequence[FamilyResults], tau: int) -> list[bool]:
    """Per family, whether some probe that was run solved it ("Any probe": a rung not run solves nothing)."""
    return [parent_outcome(f.ladder, tau) is not Outcome.UNRECOVERED for f in fams]


def primitive_ran(fams: list[FamilyResults]) -> bool:
    """Whether any family was probed with C2-primitive: the rung's columns say "not run" otherwise."""
    return any(ran(f, C2P.name) for f in fams)


def known_gap(f: FamilyResults, tau: int = 1, mode: str = "strict") -> Gap | None:
    """The five-way label, or None when it cannot be known: the parent outcome is unknown, or the family
    is not Direct and has no Stage 0 verdicts."""
    out = known_outcome(f, tau)
    if out is Outcome.DIRECT:
        return Gap.DIRECT
    if out is None or not stage0_ran(f):
        return None
    return classify(f, tau, mode)


def gap_label(f: FamilyResults, tau: int = 1, mode: str = "strict") -> str:
    """The five-way label as every table prints it (`known_gap`): its name, or "Not classified"."""
    return g.value if (g := known_gap(f, tau, mode)) else NOT_CLASSIFIED


def share_of(k: int, n: int) -> float | None:
    return k / n if n else None


def common_pids(students: Mapping[str, list[FamilyResults]], names: Iterable[str]) -> list[str]:
    """The pids every one of ``names`` has results on, in the first one's order."""
    names = list(names)
    have = [{f.pid for f in students[s]} for s in names[1:]]
    return [f.pid for f in students[names[0]] if all(f.pid in h for h in have)]


def by_pid(fams: list[FamilyResults], pids: list[str]) -> list[FamilyResults]:
    by = {f.pid: f for f in fams}
    return [by[p] for p in pids]
