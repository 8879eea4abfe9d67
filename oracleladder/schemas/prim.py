"""The primitive as PRIM defines it (PRIM §2.1, App. A.2, A.5): three fields, a type from the frozen
ten-type taxonomy (Table 5) or ``computation_only``, the family its primary type routes to (Table 6),
and who wrote it.

A primitive is read from a model's output as labelled text (``essential_property: ...``), not as
JSON: base models are probed too. The labelled text is also how a primitive is shown to a student
and to the judge (the prompts of Fig. 8 and 9 write it that way).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

# Table 6: each of the ten types routes to exactly one family
ROUTES: dict[str, str] = {
    "reformulation": "RECAST", "hidden_structure": "RECAST", "reduction_or_embedding": "RECAST",
    "duality_or_representation": "RECAST", "theorem_applicability": "RECAST",
    "construction_or_witness": "WITNESS", "extremal_principle": "WITNESS", "invariant_or_monotonicity": "WITNESS",
    "obstruction_or_contradiction": "ARGUMENT", "induction_or_recursion": "ARGUMENT",
}
TYPES: tuple[str, ...] = (*ROUTES, "computation_only")  # Table 5 and its escape hatch
FAMILIES: tuple[str, ...] = ("RECAST", "WITNESS", "ARGUMENT")
FIELDS: tuple[str, ...] = ("essential_property", "solution_principle", "core_concept")

PrimFamily = Literal["RECAST", "WITNESS", "ARGUMENT"]
# gold: human-annotated, imported; teacher: written with the answer and solution (Fig. 7);
# teacher-problem-only: from the problem alone (Fig. 10); self: the student's own (Discovery)
PrimProvenance = Literal["gold", "teacher", "teacher-problem-only", "self"]
PROVENANCES: tuple[str, ...] = ("gold", "teacher", "teacher-problem-only", "self")
# today's one-sentence primitives (schemas.Primitive) -> PRIM's provenance: both were written by a
# teacher with the answer in hand (with the roadmap, or with it and the answer), PRIM's "teacher"
LEGACY_PROVENANCE: dict[str, str] = {"teacher": "teacher", "teacher-primitives-only": "teacher",
                                     "key-move-fallback": "teacher"}


def route(primary_type: str) -> PrimFamily | None:
    """The family ``primary_type`` routes to (Table 6); None for computation_only."""
    return ROUTES.get(primary_type)  # type: ignore[return-value]


class PrimPrimitive(BaseModel):
    """One primitive of one problem. ``author``: the teacher's or student's model ('' for gold);
    a problem holds one primitive per (provenance, author)."""

    pid: str
    essential_property: str = ""
    solution_principle: str = ""
    core_concept: str
    primary_type: str | None = None
    secondary_types: list[str] = Field(default_factory=list)
    family: PrimFamily | None = None
    provenance: PrimProvenance
    author: str = ""
    origin: str | None = None  # a primitive migrated from the primitive rung: its provenance there

    @property
    def text(self) -> str:
        """Its fields as one text, as the teacher's reply is checked (`prim.compile.text_of`)."""
        return "\n".join(getattr(self, name) for name in FIELDS)

    @field_validator("core_concept")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("core_concept is empty")
        return value

    @field_validator("primary_type")
    @classmethod
    def _known_primary(cls, value: str | None) -> str | None:
        if value is not None and value not in TYPES:
            raise ValueError(f"unknown primitive type {value!r}; the taxonomy's keys: {', '.join(TYPES)}")
        return value

    @field_validator("secondary_types")
    @classmethod
    def _known_secondary(cls, value: list[str]) -> list[str]:
        if len(value) > 3:
            raise ValueError(f"{len(value)} secondary types; at most 3")
        unknown = [t for t in value if t not in TYPES]
        if unknown:
            raise ValueError(f"unknown primitive type {unknown[0]!r}; the taxonomy's keys: {', '.join(TYPES)}")
        return value

    @model_validator(mode="after")
    def _routed(self) -> PrimPrimitive:
        """The family is the primary type's (Table 6); given without a type it is taken as given."""
        routed = route(self.primary_type) if self.primary_type else None
        if self.family is None:
            self.family = routed
        elif routed is not None and self.family != routed:
            raise ValueError(f"family {self.family} but primary type {self.primary_type} routes to {routed}")
        return self

    def labelled(self) -> str:
        """The three fields as labelled text, as students and the judge are shown a primitive."""
        return "\n".join(f"{name}: {getattr(self, name).strip()}" for name in FIELDS)


_LABEL = re.compile(r"^[\s>*#_`-]*(essential_property|solution_principle|core_concept)[\s*_`]*:[\s*]*(.*)$",
                    re.IGNORECASE | re.MULTILINE)


def read_labelled(text: str) -> dict[str, str] | None:
    """The three fields of a primitive written as labelled text (each label at a line's start, its
    value running to the next label); the last occurrence of each label counts (a model that drafts
    and then answers). None unless core_concept is there and not empty: an output with no readable
    primitive is the student's failure, never a missing score."""
    marks = list(_LABEL.finditer(text))
    fields: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        value = (m.group(2) + text[m.end():end]).strip().strip('"').strip()
        fields[m.group(1).lower()] = value
    if not fields.get("core_concept"):
        return None
    return {name: fields.get(name, "") for name in FIELDS}
