"""The primitive rung against the roadmap for one student (`ladder compare --primitive`): C2-primitive
against C2 on the families where both were run, with the paired exact McNemar: `primitive_table`
computes it, `write_primitive_vs_roadmap` writes it as JSON and Markdown."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..ladder.outcomes import FamilyResults, solved
from ..schemas.conditions import C2, C2P
from .markdown import pct
from .palette import n_families
from .stats import McNemar, mcnemar_exact
from .tables import Frozen


class PrimitiveVsRoadmap(Frozen):
    """Who solves what (>= tau of K) on the families where both were run, per-attempt rates, McNemar."""

    tau: int
    n: int
    pids: list[str]
    both: int
    primitive_only: int
    roadmap_only: int
    neither: int
    per_attempt: dict[str, float | None]  # "C2-primitive" and "C2"
    mcnemar: McNemar


def primitive_table(results: Sequence[FamilyResults], tau: int = 1) -> PrimitiveVsRoadmap:
    both = [r for r in results if r.ladder.get(C2P.name) and r.ladder.get(C2.name)]
    p = [solved(r.ladder[C2P.name], tau) for r in both]
    c2 = [solved(r.ladder[C2.name], tau) for r in both]

    def rate(cond: str) -> float | None:
        rolls = [v for r in both for v in r.ladder[cond]]
        return sum(rolls) / len(rolls) if rolls else None

    return PrimitiveVsRoadmap(
        tau=tau, n=len(both), pids=[r.pid for r in both],
        both=sum(a and b for a, b in zip(p, c2)), primitive_only=sum(a and not b for a, b in zip(p, c2)),
        roadmap_only=sum(b and not a for a, b in zip(p, c2)), neither=sum(not (a or b) for a, b in zip(p, c2)),
        per_attempt={C2P.short: rate(C2P.name), C2.short: rate(C2.name)},
        mcnemar=mcnemar_exact(p, c2),
    )


def primitive_md(t: PrimitiveVsRoadmap, roadmap_set: str, student: str) -> str:
    m, rate = t.mcnemar, t.per_attempt
    return "\n".join([
        f"# Primitive vs roadmap: {roadmap_set} (student {student})", "",
        f"{n_families(t.n)} probed with both C2-primitive (the primitive alone) and C2 (the roadmap); "
        f"solved = at least {t.tau} correct of K.", "",
        "| | C2 solves | C2 does not |", "|---|---|---|",
        f"| C2-primitive solves | {t.both} | {t.primitive_only} |",
        f"| C2-primitive does not | {t.roadmap_only} | {t.neither} |", "",
        f"Per-attempt success: C2-primitive {pct(rate['C2-primitive'])}, C2 {pct(rate['C2'])}.", "",
        f"Paired exact McNemar: {m.only_a} only with the primitive, {m.only_b} only with the roadmap, "
        f"p = {m.p_value:.3g}.", ""])


def write_primitive_vs_roadmap(t: PrimitiveVsRoadmap, out_dir: str | os.PathLike[str], roadmap_set: str, student: str) -> None:
    """primitive_vs_roadmap.json and .md in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "primitive_vs_roadmap.json").write_text(json.dumps(
        {"roadmap_set": roadmap_set, "student": student, **t.model_dump()}, indent=2))
    (out / "primitive_vs_roadmap.md").write_text(primitive_md(t, roadmap_set, student))
