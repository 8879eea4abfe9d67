"""The primitive rung on the student side (docs/primitive.md): C2-primitive shows the parent with the
family's primitive (the key idea alone), its control C2-primitive-random the parent with another
family's primitive, drawn like the other controls (seeded, from the other families of the set).

Both run only on families that have a primitive: a teacher's, or, when the run asks for it, the
documented fallback, the description of the family's first KEY_MOVE milestone. A family without
either is skipped and counted (``without_primitive``), never probed with an empty hint.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...prompts import load
from ...schemas import LADDER, Condition, Family, MilestoneType, Primitive
from .prompts import description, messages, seeded_rng


def family_primitive(family: Family, fallback: bool = False) -> Primitive | None:
    """The family's primitive; with ``fallback``, else its first KEY_MOVE milestone's description,
    marked ``key-move-fallback``; else None."""
    if family.primitive is not None:
        return family.primitive
    if fallback:
        for _, m in family.tested():
            if m.type is MilestoneType.KEY_MOVE:
                return Primitive(text=description(m), provenance="key-move-fallback")
    return None


def without_primitive(families: Sequence[Family], fallback: bool = False) -> list[str]:
    """The pids a primitive condition skips: no primitive (and no fallback, when one is allowed)."""
    return [f.pid for f in families if family_primitive(f, fallback) is None]


def primitive_prompt(family: Family, condition: Condition, pool: Sequence[Family], *, seed: int = 0,
                     fallback: bool = False) -> tuple[list[dict[str, str]], list[str]]:
    """Messages for C2-primitive or C2-primitive-random, and the pids whose primitive the control borrowed."""
    own = family_primitive(family, fallback)
    if own is None:
        raise ValueError(f"family {family.pid} has no primitive; `ladder compile --primitives-only` writes one")
    borrowed: list[str] = []
    spec = LADDER[condition] if condition in LADDER else None
    if spec is not None and spec.shows == "primitive":
        text = own.text
    elif spec is not None and spec.shows == "donor primitive":
        others = [(f, p) for f in pool if f.pid != family.pid and (p := family_primitive(f, fallback)) is not None]
        if not others:
            raise ValueError(f"{spec.short} needs at least one other family with a primitive in the set")
        donor, primitive = seeded_rng(seed, family.pid, condition).choice(others)
        text, borrowed = primitive.text, [donor.pid]
    else:
        raise ValueError(f"not a primitive condition: {condition!r}")
    return messages(load(spec.template).render(parent_prompt=family.parent_prompt, primitive=text)), borrowed
