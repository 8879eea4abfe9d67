"""Re-anchoring (paper, Appendix B, Tables 3-6): does the model ranking depend on the screen's anchor?
And which families does each anchor's screen keep (Appendix N, Table 29: ``kept_across``)?

Each anchor's screen keeps a subset of families; within it every other model has a composition-gap count.
Two anchors are compared by Kendall's tau (scipy's default, tau-b) between their counts on the models that
are anchor in neither screen. Ranks and counts give the same tau, so counts are compared directly.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from pydantic import BaseModel

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults, Gap, classify, milestone_test
from ..schemas import LADDER
from ..store import ScreenVerdict
from .screen import KEPT

if TYPE_CHECKING:
    import scipy.stats
else:  # loaded with the first tau, not by `ladder --help` (which imports this module)
    scipy = lazy_module("scipy")


class ReanchorTable(BaseModel):
    anchors: list[str]
    subsets: dict[str, int]
    counts: dict[str, dict[str, int]]  # per anchor, each other model's composition-gap count (Table 3)
    ranking: dict[str, list[str]]  # per anchor: the other models, most composition-gap families first
    tau: dict[str, dict[str, float | None]]  # None: undefined (a ranking all ties, or fewer than 2 shared models)
    mean: float | None  # over the defined anchor pairs
    positive: int
    pairs: int


def _tau(x: list[int], y: list[int]) -> float | None:
    if len(x) < 2:
        return None
    value = float(scipy.stats.kendalltau(x, y).statistic)
    return None if math.isnan(value) else value


def reanchor(counts: dict[str, dict[str, int]], subsets: dict[str, int] | None = None) -> ReanchorTable:
    """Kendall's tau for every anchor pair from per-anchor composition-gap counts {anchor: {model: count}}.

    An anchor's own column, if given, is ignored: the anchor is never scored in its own screen.
    """
    anchors = list(counts)
    scored = {a: {m: n for m, n in counts[a].items() if m != a} for a in anchors}
    for a in anchors:
        missing = sorted(set().union(*scored.values()) - set(scored[a]) - {a})
        if missing:
            raise ValueError(f"anchor {a}: no count for {', '.join(missing)}")
    tau: dict[str, dict[str, float | None]] = {a: {a: 1.0} for a in anchors}
    for a, b in combinations(anchors, 2):
        shared = [m for m in scored[a] if m != b and m in scored[b]]
        tau[a][b] = tau[b][a] = _tau([scored[a][m] for m in shared], [scored[b][m] for m in shared])
    defined = [t for a, b in combinations(anchors, 2) if (t := tau[a][b]) is not None]
    return ReanchorTable(
        anchors=anchors,
        subsets=dict(subsets or {}),
        counts=scored,
        ranking={a: sorted(scored[a], key=lambda m: -scored[a][m]) for a in anchors},
        tau=tau,
        mean=sum(defined) / len(defined) if defined else None,
        positive=sum(1 for t in defined if t > 0),
        pairs=len(anchors) * (len(anchors) - 1) // 2,
    )


class KeptAcross(BaseModel):
    """Table 29: the sets several anchors' screens keep, side by side. ``both[a][b]``: the families kept
    by a's screen and by b's (the diagonal: a's kept families)."""

    sets: list[str]
    anchors: dict[str, str]
    screened: dict[str, int]
    kept: dict[str, int]
    both: dict[str, dict[str, int]]


def kept_across(verdicts: Mapping[str, Sequence[ScreenVerdict]]) -> KeptAcross:
    """The cross-tab of the families kept by each screened set (``{set: its verdicts}``)."""
    kept = {s: {v.pid for v in vs if v.verdict == KEPT} for s, vs in verdicts.items()}
    return KeptAcross(sets=list(verdicts), anchors={s: vs[0].anchor for s, vs in verdicts.items()},
                      screened={s: len(vs) for s, vs in verdicts.items()}, kept={s: len(k) for s, k in kept.items()},
                      both={a: {b: len(kept[a] & kept[b]) for b in kept} for a in kept})


def gap_counts(results: Mapping[str, Sequence[FamilyResults]], anchors: Sequence[str], k: int,
               ) -> tuple[dict[str, int], dict[str, dict[str, int]], list[str]]:
    """Per anchor, its subset's size and each other model's composition-gap count there (Table 3), from
    every model's results on one set. An anchor's subset: the families where it passes the milestone test
    and fails all K direct attempts. A family where some model lacks one of its K verdicts of Stage 0 or
    of C1-C3 (a failed call, an ungraded answer, never probed) is left out of every subset and listed."""
    by_model = {m: {r.pid: r for r in rs} for m, rs in results.items()}
    pids = list(dict.fromkeys(pid for rs in by_model.values() for pid in rs))

    def complete(r: FamilyResults | None) -> bool:
        return r is not None and bool(r.stage0) and all(len(v) == k for v in r.stage0.values()) and all(
            len(r.ladder.get(c, [])) == k for c in LADDER.parent_probes)  # a composition gap is Unrecovered under all

    incomplete = [p for p in pids if not all(complete(by_model[m].get(p)) for m in by_model)]
    usable = [p for p in pids if p not in incomplete]
    subsets: dict[str, int] = {}
    counts: dict[str, dict[str, int]] = {}
    for a in anchors:
        subset = [p for p in usable if milestone_test(by_model[a][p].stage0)
                  and not any(by_model[a][p].ladder[LADDER.parent_probes[0]])]
        subsets[a] = len(subset)
        counts[a] = {m: sum(classify(by_model[m][p]) is Gap.COMPOSITION for p in subset) for m in by_model if m != a}
    return subsets, counts, incomplete
