"""Family-level statistics: paired exact McNemar (Appendix E) with Benjamini-Hochberg over a set of tests, bootstrap CIs (Appendix F), paired label
transitions (Table 38) and the threshold sweep (Table 9).

NumPy and SciPy load with the first statistic computed, not with this module: the report's tables
import it, and `ladder --help` imports those."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults, outcome_counts
from ..schemas.conditions import C2P

if TYPE_CHECKING:
    import numpy as np
    import scipy.stats
else:
    np = lazy_module("numpy")
    scipy = lazy_module("scipy")


class Result(BaseModel):
    model_config = ConfigDict(frozen=True)


class McNemar(Result):
    only_a: int  # pairs the first solves and the second does not
    only_b: int
    discordant: int
    p_value: float


class Interval(Result):
    """A share's point estimate and its percentile interval over family resamples."""

    point: float
    lo: float
    hi: float
    n_resamples: int
    seed: int


class Transitions(Result):
    """counts[a][b]: pairs labelled a first and b second; rows and columns in ``labels`` order."""

    labels: list[str]
    counts: dict[str, dict[str, int]]
    row_totals: dict[str, int]
    col_totals: dict[str, int]
    n: int
    same: int


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Two-sided exact McNemar: binomial test on discordant pairs (b01 vs b10) at p=0.5."""
    if len(a) != len(b):
        raise ValueError("paired inputs must have equal length")
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    n = only_a + only_b
    p = 1.0 if n == 0 else float(scipy.stats.binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)
    return McNemar(only_a=only_a, only_b=only_b, discordant=n, p_value=p)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the order given; [] for none."""
    if not p_values:
        return []
    return [float(q) for q in scipy.stats.false_discovery_control(list(p_values), method="bh")]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem from n graded attempts, c of them correct (Chen et al., 2021):
    1 - C(n - c, k) / C(n, k); needs n >= k."""
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def bootstrap_ci(values: Sequence[float], n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> Interval:
    """Percentile CI of the mean (a share, for 0/1 values) from family-level resampling with replacement."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    stats = x[idx].mean(axis=1)  # each resample's mean, as np.mean gives it (the same sums), in one call
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return Interval(point=float(np.mean(x)), lo=float(lo), hi=float(hi), n_resamples=n_resamples, seed=seed)


class Rank(Result):
    """A model's rank by a count among several (1: the largest; ties share the better rank), on the
    observed families and its percentile interval over paired family resamples."""

    point: int
    lo: int
    hi: int
    n_resamples: int
    seed: int


def _ranks(counts: np.ndarray) -> np.ndarray:
    """Rank of each row of ``counts`` (models x resamples) within its column: 1 + models counted higher."""
    return 1 + (counts[None, :, :] > counts[:, None, :]).sum(axis=1)


def bootstrap_ranks(solved: Sequence[Sequence[bool]], n_resamples: int = 1000, seed: int = 0,
                    level: float = 0.95) -> list[Rank]:
    """Table 12's rank column: each model's rank by its count of solved families (``solved``: one row per
    model over the same families), with the percentile interval of its rank over family resamples drawn
    once for every model (as bootstrap_ci draws them, so the same seed gives the same resamples)."""
    x = np.asarray(solved, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.shape[1], size=(n_resamples, x.shape[1]))
    ranks = _ranks(x[:, idx].sum(axis=2))
    point = _ranks(x.sum(axis=1)[:, None])[:, 0]
    lo, hi = np.quantile(ranks, [(1 - level) / 2, 1 - (1 - level) / 2], axis=1, method="inverted_cdf")
    return [Rank(point=int(p), lo=int(a), hi=int(b), n_resamples=n_resamples, seed=seed)
            for p, a, b in zip(point, lo, hi)]


def bootstrap_order(a: Sequence[bool], b: Sequence[bool], n_resamples: int = 1000, seed: int = 0) -> float:
    """Fraction of paired family resamples where sum(a) > sum(b)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    return float(np.mean(x[idx].sum(1) > y[idx].sum(1)))


def _label(x) -> str:
    return x.value if hasattr(x, "value") else str(x)


def transition_matrix(a_labels: Sequence, b_labels: Sequence, labels: Sequence | None = None) -> Transitions:
    """Paired label transitions (Table 38).

    Labels may be Enum members (their value is used) or strings. `labels` fixes the row/column
    order; by default Enum order when the inputs are Enum members, else first appearance.
    """
    if len(a_labels) != len(b_labels):
        raise ValueError("paired inputs must have equal length")
    a = [_label(x) for x in a_labels]
    b = [_label(x) for x in b_labels]
    if labels is None:
        first = next(iter(list(a_labels) + list(b_labels)), None)
        if first is not None and hasattr(type(first), "__members__"):
            labels = [m.value for m in type(first)]
        else:
            labels = list(dict.fromkeys(a + b))
    else:
        labels = [_label(x) for x in labels]
    extra = (set(a) | set(b)) - set(labels)
    if extra:
        raise ValueError(f"labels not in order list: {sorted(extra)}")
    counts = {r: {c: 0 for c in labels} for r in labels}
    for x, y in zip(a, b):
        counts[x][y] += 1
    return Transitions(
        labels=list(labels),
        counts=counts,
        row_totals={r: sum(counts[r].values()) for r in labels},
        col_totals={c: sum(counts[r][c] for r in labels) for c in labels},
        n=len(a),
        same=sum(counts[r][r] for r in labels),
    )


def threshold_sweep(families: Sequence[FamilyResults], taus: Sequence[int] = (1, 2, 3, 4, 5)) -> dict[int, dict[str, int]]:
    """Table 9: four-state parent-probe outcome counts at each success threshold tau."""
    primitive = any(f.ladder.get(C2P.name) for f in families)  # its rung only where it was run
    return {int(tau): outcome_counts(families, tau, primitive) for tau in taus}


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels on the same items: (p_o − p_e) / (1 − p_e); 1.0 when both
    give every item the one same label (no chance agreement to correct)."""
    if len(a) != len(b) or not a:
        raise ValueError("kappa needs two label lists of the same, non-zero length")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[label] * cb[label] for label in ca.keys() | cb.keys()) / (n * n)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> dict[str, Any]:
    """Two raters' labels of the same items (a person and a judge, two people): the items, the raw
    agreement as a count and a share, and Cohen's kappa."""
    agree = sum(x == y for x, y in zip(a, b))
    return {"n": len(a), "agree": agree, "raw": agree / len(a), "kappa": cohen_kappa(a, b)}
