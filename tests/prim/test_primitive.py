"""The primitive as PRIM defines it: the taxonomy's keys, the family routed from the primary type,
at most three secondary types, and the three fields read from labelled text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from oracleladder.schemas.prim import ROUTES, TYPES, PrimPrimitive, read_labelled


@pytest.mark.parametrize("primary,family", [("reformulation", "RECAST"), ("theorem_applicability", "RECAST"),
                                            ("extremal_principle", "WITNESS"), ("invariant_or_monotonicity", "WITNESS"),
                                            ("induction_or_recursion", "ARGUMENT"), ("computation_only", None)])
def test_the_family_is_routed_from_the_primary_type(primary: str, family: str | None) -> None:
    p = PrimPrimitive(pid="p", core_concept="c", primary_type=primary, provenance="gold")
    assert p.family == family


def test_the_taxonomy_is_ten_types_and_the_escape_hatch() -> None:
    assert len(ROUTES) == 10 and TYPES[-1] == "computation_only"
    assert sorted(set(ROUTES.values())) == ["ARGUMENT", "RECAST", "WITNESS"]


@pytest.mark.parametrize("fields,message", [
    ({"primary_type": "Reformulation"}, "unknown primitive type"),
    ({"secondary_types": ["reformulation"] * 4}, "at most 3"),
    ({"secondary_types": ["clever_trick"]}, "unknown primitive type"),
    ({"primary_type": "reformulation", "family": "WITNESS"}, "routes to RECAST"),
    ({"provenance": "key-move-fallback"}, "provenance"),
    ({"core_concept": "  "}, "core_concept is empty"),
])
def test_a_primitive_off_the_taxonomy_is_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PrimPrimitive.model_validate({"pid": "p", "core_concept": "c", "provenance": "gold", **fields})


def test_labelled_text_is_read_with_each_label_at_a_line_start() -> None:
    text = ("Let me think first.\n**essential_property**: the sums of blocks\nare geometric\n"
            "solution_principle: AM-GM on one variable\n- core_concept: \"blocks form a progression\"\n")
    assert read_labelled(text) == {"essential_property": "the sums of blocks\nare geometric",
                                   "solution_principle": "AM-GM on one variable",
                                   "core_concept": "blocks form a progression"}
    # the last draft counts; the label inside a sentence is not a label
    assert read_labelled("core_concept: first\ncore_concept: second")["core_concept"] == "second"
    assert read_labelled("I would say the core_concept: is hidden") is None
    assert read_labelled("essential_property: only this") is None  # no core concept: unreadable
    assert read_labelled("\\boxed{196}") is None
