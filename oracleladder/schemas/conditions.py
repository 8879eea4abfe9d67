"""The ladder's conditions, each declared once (`Spec`) in one registry (`LADDER`): its released name, the
short name users type and read, its prompt template, what the template is filled with, its role (a rung
of the ladder, or a control of one), the contrasts it takes part in and its column in the tables.

Outcomes (`ladder.outcomes`), the report's tables, the panels, the math domain's prompts and `--help`
iterate `LADDER`; adding a condition is one `LADDER.register(Spec(...))` and its prompt file
(docs/architecture.md). A new rung also needs its outcome and gap in `ladder.outcomes`: they are the
paper's taxonomy, not a declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .registry import Registry

# A condition's released name: the stored rollout target and a part of every call key (stores and
# caches are keyed by it), so a declared name never changes.
Condition = str

# What a condition's template is filled with (`domains/math/prompts.py` builds each): the parent alone;
# with the family's roadmap (its milestone descriptions); with the roadmap and the milestones' gold
# answers; with another family's roadmap; with the family's roadmap and other families' answers; with the
# family's primitive; with another family's primitive.
Shows = Literal["parent", "roadmap", "roadmap+answers", "donor roadmap", "roadmap+donor answers", "primitive",
                "donor primitive"]
DONOR_SHOWS: frozenset[Shows] = frozenset({"donor roadmap", "roadmap+donor answers"})  # borrow milestones
PRIMITIVE_SHOWS: frozenset[Shows] = frozenset({"primitive", "donor primitive"})  # need a family's primitive


@dataclass(frozen=True)
class Versus:
    """A contrast the condition is the first member of (paired exact McNemar, Tables 10-11)."""

    other: Condition  # the second member
    planned: bool  # a planned contrast (Table 11, Benjamini-Hochberg adjusted); else Table 10
    place: int  # its place among every contrast of the report (the paper's order; a new one: after them)


@dataclass(frozen=True)
class Spec:
    """One condition of the ladder."""

    name: Condition  # the released name (never changes: see Condition)
    short: str  # the paper's short name: what users type (or the released name) and every output prints
    template: str  # its user-turn prompt file in prompts/ (a control is written with its rung's)
    shows: Shows
    column: int  # its place in Table 21 and every table with a column per condition
    rung: int | None = None  # a rung: its place up the ladder (read from the bottom); None: a control
    outcome: str | None = None  # a rung: the outcome (`ladder.outcomes.Outcome`) of a family it first solves
    control_of: Condition | None = None  # a control: the rung it controls for
    optional: bool = False  # run only when asked for (the primitive rung), never by default
    contrasts: tuple[Versus, ...] = ()

    def __post_init__(self) -> None:
        if (self.rung is None) == (self.control_of is None) or (self.rung is None) != (self.outcome is None):
            raise ValueError(f"condition {self.name}: a rung (with its outcome) or a control of a rung, one of them")


class Ladder(Registry[Spec]):
    """The declared conditions in declaration order (the order a probe runs them and report.json lists them)."""

    kind = "condition"

    def taken(self, spec: Spec) -> bool:
        return bool(self.lookup(spec.name) or self.lookup(spec.short))  # either spelling, in any case

    def register(self, spec: Spec) -> Spec:
        """Declare ``spec``; refused (ValueError) where its name or short name is taken, or it controls an
        undeclared rung (a contrast may name a condition declared after it: `contrasts` reads them)."""
        if spec.control_of is not None and spec.control_of not in self:
            raise ValueError(f"condition {spec.name} controls an undeclared condition: {spec.control_of}")
        return super().register(spec)

    @property
    def default(self) -> tuple[Condition, ...]:
        """The conditions a probe runs when none is named."""
        return tuple(s.name for s in self if not s.optional)

    @property
    def optional(self) -> tuple[Condition, ...]:
        """The conditions run only when asked for (the primitive rung and its control)."""
        return tuple(s.name for s in self if s.optional)

    @property
    def every(self) -> tuple[Condition, ...]:
        return self.default + self.optional

    @property
    def columns(self) -> tuple[Condition, ...]:
        """Every condition in table-column order (Table 21)."""
        return tuple(s.name for s in sorted(self, key=lambda s: s.column))

    @property
    def rungs(self) -> tuple[Spec, ...]:
        """The rungs from the bottom of the ladder up: the order an outcome is read in."""
        return tuple(sorted((s for s in self if s.rung is not None), key=lambda s: s.rung or 0))

    @property
    def parent_probes(self) -> tuple[Condition, ...]:
        """The rungs run by default, from the bottom (C1, C2, C3): a family none of them solves is Unrecovered."""
        return tuple(s.name for s in self.rungs if not s.optional)

    @property
    def contrasts(self) -> tuple[tuple[str, Condition, Condition, bool], ...]:
        """Every contrast in its place: (name, first condition, second, planned)."""
        every = sorted(((v, s) for s in self for v in s.contrasts), key=lambda vs: vs[0].place)
        return tuple((f"{s.short} vs {self[v.other].short}", s.name, v.other, v.planned) for v, s in every)

    def label(self, target: str) -> str:
        """A condition's short name; any other target ("Stage 0", "m0") as it is."""
        return self[target].short if target in self else target

    def lookup(self, name: str) -> Condition | None:
        """The released name of a condition given by its short name (C2-random) or its released name
        (C2_random), in any case, with '-' or '_'; None for no condition."""
        key = _key(name)
        return next((s.name for s in self if key in (_key(s.name), _key(s.short))), None)

    def parse(self, name: str) -> Condition:
        """`lookup`, refused (ValueError, naming the known ones) for no condition."""
        found = self.lookup(name)
        if found is None:
            raise ValueError(f"unknown condition '{name}'; known: {', '.join(s.short for s in self)}")
        return found


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


# The paper's ladder (Sections 2-4, Appendix C) and the primitive rung (docs/primitive.md). The places of
# the contrasts are the paper's: Table 11's planned ones, then Table 10's against direct prompting.
C1 = Spec("C1_direct", "C1", "c1_direct", "parent", column=0, rung=0, outcome="Direct")
C2 = Spec("C2_descriptions", "C2", "c2_descriptions", "roadmap", column=5, rung=2, outcome="Roadmap-Needed",
          contrasts=(Versus(C1.name, True, 0), Versus("C2_random", True, 1), Versus("C2_generic", True, 2)))
C3 = Spec("C3_gold_answers", "C3", "c3_gold_answers", "roadmap+answers", column=7, rung=3,
          outcome="Answers-Needed", contrasts=(Versus("C3_mismatched", True, 3), Versus(C1.name, False, 8)))
C2_RANDOM = Spec("C2_random", "C2-random", "c2_descriptions", "donor roadmap", column=1, control_of=C2.name,
                 contrasts=(Versus(C1.name, False, 5),))
C2_GENERIC = Spec("C2_generic", "C2-generic", "c2_generic", "parent", column=2, control_of=C2.name,
                  contrasts=(Versus(C1.name, False, 6),))
C3_MISMATCHED = Spec("C3_mismatched", "C3-mismatched", "c3_gold_answers", "roadmap+donor answers", column=6,
                     control_of=C3.name, contrasts=(Versus(C1.name, False, 7),))
C2P = Spec("C2_primitive", "C2-primitive", "c2_primitive", "primitive", column=4, rung=1, outcome="Primitive-Needed",
           optional=True, contrasts=(Versus("C2_primitive_random", True, 4), Versus(C1.name, False, 9)))
C2P_RANDOM = Spec("C2_primitive_random", "C2-primitive-random", "c2_primitive", "donor primitive", column=3,
                  control_of=C2P.name, optional=True, contrasts=(Versus(C1.name, False, 10),))

LADDER = Ladder(C1, C2, C3, C2_RANDOM, C2_GENERIC, C3_MISMATCHED, C2P, C2P_RANDOM)
