"""The primitive rung on the student side (docs/primitive.md): C2-primitive shows the parent with the
family's primitive (the key idea alone), its control C2-primitive-random the parent with another
family's primitive, drawn like the other controls (seeded, from the other families of the set).

Both run only on families that have a primitive: a teacher's, or, when the run asks for it, the
documented fallback, the description of the family's first KEY_MOVE milestone. A family without
either is skipped and counted (``without_primitive``), never probed with an empty hint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..prompts import load
from ..schemas import Condition, Family, MilestoneType, Primitive
from .outcomes import FamilyResults, solved
from .prompts import _rng, description, messages

if TYPE_CHECKING:
    from . import stats as _stats
else:  # SciPy: loaded by the first comparison, not by `ladder --help` or a probe
    _stats = lazy_module("oracleladder.probe.stats")

C2P, C2P_RANDOM, C2 = "C2_primitive", "C2_primitive_random", "C2_descriptions"


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
    if condition == C2P:
        text = own.text
    elif condition == C2P_RANDOM:
        others = [f for f in pool if f.pid != family.pid and family_primitive(f, fallback) is not None]
        if not others:
            raise ValueError("C2-primitive-random needs at least one other family with a primitive in the set")
        donor = _rng(seed, family.pid, condition).choice(others)
        text, borrowed = family_primitive(donor, fallback).text, [donor.pid]
    else:
        raise ValueError(f"not a primitive condition: {condition!r}")
    return messages(load("c2_primitive").render(parent_prompt=family.parent_prompt, primitive=text)), borrowed


def primitive_vs_roadmap(results: Sequence[FamilyResults], tau: int = 1) -> dict:
    """C2-primitive against C2 for one student on the families where both were run: who solves what
    (>= tau of K), per-attempt rates, and the paired exact McNemar."""
    both = [r for r in results if r.ladder.get(C2P) and r.ladder.get(C2)]
    p = [solved(r.ladder[C2P], tau) for r in both]
    c2 = [solved(r.ladder[C2], tau) for r in both]

    def rate(cond: str) -> float | None:
        rolls = [v for r in both for v in r.ladder[cond]]
        return sum(rolls) / len(rolls) if rolls else None

    return {
        "tau": tau, "n": len(both), "pids": [r.pid for r in both],
        "both": sum(a and b for a, b in zip(p, c2)), "primitive_only": sum(a and not b for a, b in zip(p, c2)),
        "roadmap_only": sum(b and not a for a, b in zip(p, c2)), "neither": sum(not (a or b) for a, b in zip(p, c2)),
        "per_attempt": {"C2-primitive": rate(C2P), "C2": rate(C2)},
        "mcnemar": _stats.mcnemar_exact(p, c2),
    }


def write_primitive_vs_roadmap(result: dict, out_dir: str | Path, roadmap_set: str, student: str) -> None:
    """primitive_vs_roadmap.json and .md in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "primitive_vs_roadmap.json").write_text(json.dumps(
        {"roadmap_set": roadmap_set, "student": student, **result}, indent=2))
    m, rate = result["mcnemar"], result["per_attempt"]

    def pct(x: float | None) -> str:
        return "not run" if x is None else f"{100 * x:.1f}%"
    lines = [f"# Primitive vs roadmap: {roadmap_set} (student {student})", "",
             f"{result['n']} families probed with both C2-primitive (the primitive alone) and C2 (the roadmap); "
             f"solved = at least {result['tau']} correct of K.", "",
             "| | C2 solves | C2 does not |", "|---|---|---|",
             f"| C2-primitive solves | {result['both']} | {result['primitive_only']} |",
             f"| C2-primitive does not | {result['roadmap_only']} | {result['neither']} |", "",
             f"Per-attempt success: C2-primitive {pct(rate['C2-primitive'])}, C2 {pct(rate['C2'])}.", "",
             f"Paired exact McNemar: {m['only_a']} only with the primitive, {m['only_b']} only with the roadmap, "
             f"p = {m['p_value']:.3g}.", ""]
    (out / "primitive_vs_roadmap.md").write_text("\n".join(lines))
