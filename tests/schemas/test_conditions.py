"""The ladder's declarations (`schemas.conditions.LADDER`) give what the paper's tables were written with by
hand before (the order of Tables 10-11 and 21, the rungs an outcome is read from), and a declaration that
clashes with one made is refused, naming it."""

from __future__ import annotations

import pytest

from oracleladder.ladder.outcomes import Outcome, rungs_read
from oracleladder.prim.dimensions import DIMENSIONS, Dimension
from oracleladder.schemas.conditions import C2, LADDER, Spec


def test_the_declarations_give_the_papers_orders() -> None:
    assert [name for name, _, _, planned in LADDER.contrasts if planned] == [
        "C2 vs C1", "C2 vs C2-random", "C2 vs C2-generic", "C3 vs C3-mismatched", "C2-primitive vs C2-primitive-random"]
    assert [name for name, _, _, planned in LADDER.contrasts if not planned] == [
        "C2-random vs C1", "C2-generic vs C1", "C3-mismatched vs C1", "C3 vs C1", "C2-primitive vs C1",
        "C2-primitive-random vs C1"]
    assert [LADDER[c].short for c in LADDER.columns] == [
        "C1", "C2-random", "C2-generic", "C2-primitive-random", "C2-primitive", "C2", "C3-mismatched", "C3"]
    assert LADDER.default == ("C1_direct", "C2_descriptions", "C3_gold_answers", "C2_random", "C2_generic",
                              "C3_mismatched")
    assert {o: rungs_read(o) for o in Outcome} == {
        Outcome.DIRECT: ["C1_direct"], Outcome.PRIMITIVE_NEEDED: ["C1_direct", "C2_primitive"],
        Outcome.ROADMAP_NEEDED: ["C1_direct", "C2_descriptions"],
        Outcome.ANSWERS_NEEDED: ["C1_direct", "C2_descriptions", "C3_gold_answers"],
        Outcome.UNRECOVERED: ["C1_direct", "C2_descriptions", "C3_gold_answers"]}
    assert DIMENSIONS.names == ("discovery", "generation", "digestion", "execution")


def test_a_clashing_declaration_is_refused() -> None:
    with pytest.raises(ValueError, match="condition C2_other is declared already"):  # its short name, any case
        LADDER.register(Spec("C2_other", "c2-RANDOM", "c2_descriptions", "roadmap", column=9, control_of=C2.name))
    with pytest.raises(ValueError, match="controls an undeclared condition: C9"):
        LADDER.register(Spec("C9_x", "C9-x", "c2_descriptions", "roadmap", column=9, control_of="C9"))
    with pytest.raises(ValueError, match="a rung \\(with its outcome\\) or a control of a rung"):
        Spec("C9_x", "C9-x", "c2_descriptions", "roadmap", column=9)
    with pytest.raises(ValueError, match="PRIM dimension again is declared already"):  # its target is taken
        DIMENSIONS.register(Dimension("again", "Again", "prim_discovery", "prim_discovery", "problem"))
    with pytest.raises(ValueError, match="unknown condition 'C9'; known: C1, C2, C3, C2-random"):
        LADDER.parse("C9")
    assert "C2_other" not in LADDER and "C9_x" not in LADDER and "again" not in DIMENSIONS
