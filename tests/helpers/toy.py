"""A toy ladder condition and a toy PRIM dimension, each one declaration and one prompt file
(tests/data/toy_prompts/), declared for a test only, as a package adding its own would declare them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oracleladder import prompts
from oracleladder.prim.dimensions import DIMENSIONS, Dimension
from oracleladder.schemas.conditions import C1, C2, LADDER, Spec, Versus

TOY_PROMPTS = Path(__file__).resolve().parents[1] / "data" / "toy_prompts"
# a control of C2 (the roadmap, worded otherwise), after C3 in the tables, against C1 after the paper's contrasts
TOY_CONDITION = Spec("C2_toy", "C2-toy", "toy_condition", "roadmap", column=8, control_of=C2.name,
                     contrasts=(Versus(C1.name, False, 11),))
# the problem alone, answered (graded), after Execution in the tables
TOY_DIMENSION = Dimension("toy", "Toy", "prim_toy", "toy_dimension", "problem")


def declare() -> None:
    prompts.add_folder(TOY_PROMPTS)
    LADDER.register(TOY_CONDITION)
    DIMENSIONS.register(TOY_DIMENSION)


def withdraw() -> None:
    DIMENSIONS.unregister(TOY_DIMENSION.name)
    LADDER.unregister(TOY_CONDITION.name)
    prompts.remove_folder(TOY_PROMPTS)


@contextmanager
def declared() -> Iterator[None]:
    declare()
    try:
        yield
    finally:
        withdraw()
