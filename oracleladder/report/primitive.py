"""The primitive rung against the roadmap for one student (`ladder compare --primitive`): C2-primitive
against C2 on the families where both were run, with the paired exact McNemar."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults, solved

if TYPE_CHECKING:
    from . import stats as _stats
else:  # SciPy: loaded by the first comparison, not by `ladder --help` or a probe
    _stats = lazy_module("oracleladder.report.stats")

C2P, C2 = "C2_primitive", "C2_descriptions"


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
