"""Specificity contrasts (Tables 10-11): paired exact McNemar on every declared contrast
(`schemas.conditions.LADDER.contrasts`), Benjamini-Hochberg over the planned ones of every student together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from ...ladder.outcomes import FamilyResults, solved
from ...schemas.conditions import LADDER
from ..stats import benjamini_hochberg, mcnemar_exact
from .base import NOT_RUN, Frozen, ran


class Contrast(Frozen):
    """Tables 10-11, one contrast: paired exact McNemar on the families where both conditions were run."""

    contrast: str
    a: str
    b: str
    planned: bool
    status: str  # "ok", or NOT_RUN when no family has both (then n is 0 and the test's fields are None)
    n: int
    delta: int | None = None  # only_a - only_b
    only_a: int | None = None
    only_b: int | None = None
    discordant: int | None = None
    p_value: float | None = None
    p_bh: float | None = None  # Benjamini-Hochberg over the report's planned tests (None: not planned)

    @model_serializer(mode="wrap")
    def _json(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        row = handler(self)
        return row if self.status != NOT_RUN else {k: row[k] for k in ("contrast", "a", "b", "planned", "status", "n")}


class QFamily(Frozen):
    """The family of tests Benjamini-Hochberg adjusted together: the planned contrasts that ran, of every
    student the report shows (the paper adjusts its 6 models x 4 contrasts as one family of 24, Appendix E)."""

    tests: int
    students: int


def contrasts(fams: list[FamilyResults], tau: int = 1) -> list[Contrast]:
    """Every contrast of the declared conditions (`LADDER.contrasts`), in its place."""
    rows = []
    for name, ca, cb, planned in LADDER.contrasts:
        pairs = [f for f in fams if ran(f, ca) and ran(f, cb)]
        row = {"contrast": name, "a": ca, "b": cb, "planned": planned}
        if not pairs:
            rows.append(Contrast(**row, status=NOT_RUN, n=0))
            continue
        m = mcnemar_exact([solved(f.ladder[ca], tau) for f in pairs], [solved(f.ladder[cb], tau) for f in pairs])
        rows.append(Contrast(**row, status="ok", n=len(pairs), delta=m.only_a - m.only_b, **m.model_dump()))
    return adjust_planned({"": rows})[""]


def _planned_tests(contrasts: Mapping[str, list[Contrast]]) -> dict[tuple[str, int], float]:
    """The planned contrasts that ran, by (student, place): their p-values."""
    return {(s, i): c.p_value for s, rows in contrasts.items() for i, c in enumerate(rows)
            if c.planned and c.status == "ok" and c.p_value is not None}


def adjust_planned(contrasts: Mapping[str, list[Contrast]]) -> dict[str, list[Contrast]]:
    """Per student, its contrasts with ``p_bh``: Benjamini-Hochberg over the planned contrasts that ran of all
    the students together, one family as the paper's (None for the others)."""
    tests = _planned_tests(contrasts)
    q = dict(zip(tests, benjamini_hochberg(list(tests.values()))))
    return {s: [c.model_copy(update={"p_bh": q.get((s, i))}) for i, c in enumerate(rows)]
            for s, rows in contrasts.items()}


def q_family(contrasts: Mapping[str, list[Contrast]]) -> QFamily | None:
    """The family `adjust_planned` adjusts over (None: no planned contrast ran)."""
    tests = _planned_tests(contrasts)
    return QFamily(tests=len(tests), students=len({s for s, _ in tests})) if tests else None
