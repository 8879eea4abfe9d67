"""A roadmap set's own tables: its milestone types and answer schemas (Tables 7, 48), each student's types by
outcome state (Table 8), and the milestones the leak rule dropped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...ladder.outcomes import FamilyResults, ladder_outcomes, outcome_label
from ...schemas.models import Family
from ...schemas.types import AnswerSchema, MilestoneType
from .base import Frozen, primitive_ran


class MilestoneTypes(Frozen):
    """Table 7: the set's tested milestones by type; Table 48: its milestones by answer schema (None where no
    milestone states one, as the release's do not; ``schema_unknown``: those that do not)."""

    families: int
    milestones: int
    types: dict[str, int]
    answers: int  # every milestone, Integrate too: Table 48's denominator
    schemas: dict[str, int] | None
    schema_unknown: int


class TypesByOutcome(Frozen):
    """Table 8, one outcome state of one student: its families, and how many of them have at least one
    tested milestone of each type."""

    n: int
    with_type: dict[str, int]


class LeakDrop(Frozen):
    """A milestone the leak rule drops: its gold restates the reference answer (`Family.leaking`)."""

    pid: str
    target: str  # "m<i>", its Stage 0 target
    gold: str


class LeakRule(Frozen):
    """The milestones the leak rule left out of Stage 0, C2 and C3 (Appendix N, P.1), and the columns
    probed with them kept (``--keep-leaking``)."""

    dropped: list[LeakDrop]
    kept_by: list[str]


def leak_rule(families: Sequence[Family], kept_by: Sequence[str]) -> LeakRule:
    return LeakRule(dropped=[LeakDrop(pid=f.pid, target=f"m{i}", gold=f.milestones[i].answer)
                             for f in families for i in f.leaking or []], kept_by=list(kept_by))


TYPES = [t.value for t in MilestoneType if t is not MilestoneType.INTEGRATE]


def milestone_types(families: Sequence[Family]) -> MilestoneTypes:
    """Tables 7 and 48 of a set's families."""
    tested = [m for f in families for _, m in f.tested()]
    every = [m for f in families for m in f.milestones]
    schemas = Counter(m.answer_schema.value for m in every if m.answer_schema is not None)
    return MilestoneTypes(
        families=len(families), milestones=len(tested), types={t: sum(m.type.value == t for m in tested) for t in TYPES},
        answers=len(every), schemas={a.value: schemas[a.value] for a in AnswerSchema} if schemas else None,
        schema_unknown=len(every) - sum(schemas.values()))


def types_by_outcome(fams: list[FamilyResults], families: Sequence[Family], tau: int = 1) -> dict[str, TypesByOutcome]:
    """Table 8: per outcome state, the student's families (of ``families``) in it and how many have a tested
    milestone of each type."""
    types = {f.pid: {m.type.value for _, m in f.tested()} for f in families}
    out = {}
    for o in ladder_outcomes(primitive_ran(fams)):
        pids = [f.pid for f in fams if f.pid in types and outcome_label(f, tau) == o.value]
        out[o.value] = TypesByOutcome(n=len(pids), with_type={t: sum(t in types[p] for p in pids) for t in TYPES})
    return out
