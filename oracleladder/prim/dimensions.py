"""PRIM's dimensions (§2.2), each declared once (`Dimension`) in one registry (`DIMENSIONS`), in Table 1's
order: its `--dimensions` name and title, its rollouts' target, its prompt template and what fills it, and
whether the student writes a primitive (read, then scored by the judge) or answers the problem (graded).

The probe's jobs (`probe`), the tables (`analysis`) and `ladder prim probe --help` iterate it; adding a
dimension is one `DIMENSIONS.register(Dimension(...))` and its prompt file (docs/architecture.md). What the
paper sets dimensions against (Dig − Disc, Exec − Gen, the quadrants) names the built-in ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..schemas.conditions import C1
from ..schemas.registry import Registry

# What a dimension's prompt shows: the problem alone; the problem and its reference solution (a problem
# without one is skipped and counted); the ladder's C1 prompt (the same call, so the same cache entry as
# the ladder's); the parent with a primitive or a plan, one job per primitive source (Execution).
Shows = Literal["problem", "problem+solution", "parent", "parent+support"]


@dataclass(frozen=True)
class Dimension:
    name: str  # what --dimensions takes, and the tables' key
    title: str  # its column in the tables
    target: str  # its rollouts' target (a dimension shown a support: this + the primitive's source)
    template: str  # its prompt file in prompts/
    shows: Shows
    writes: bool = False  # the answer is a primitive (read as labelled text, scored by the judge); else graded


class Dimensions(Registry[Dimension]):
    """The declared dimensions in Table 1's order."""

    kind = "PRIM dimension"

    def taken(self, dim: Dimension) -> bool:
        return dim.name in self or self.by_target(dim.target) is not None

    @property
    def written(self) -> tuple[str, ...]:
        """The targets whose answer is a primitive."""
        return tuple(d.target for d in self if d.writes)

    def by_target(self, target: str) -> Dimension | None:
        """The dimension a rollout's target is of (one shown a support: its target and the source); None: none."""
        return next((d for d in self if target == d.target
                     or (d.shows == "parent+support" and target.startswith(d.target))), None)


DISCOVERY = Dimension("discovery", "Discovery", "prim_discovery", "prim_discovery", "problem", writes=True)
GENERATION = Dimension("generation", "Generation", C1.name, C1.template, "parent")
DIGESTION = Dimension("digestion", "Digestion", "prim_digestion", "prim_digestion", "problem+solution", writes=True)
# a primitive shown as the primitive rung shows one (`c2_primitive`); the teacher's plan with its own template
EXECUTION = Dimension("execution", "Execution", "prim_execution:", "c2_primitive", "parent+support")

DIMENSIONS = Dimensions(DISCOVERY, GENERATION, DIGESTION, EXECUTION)
