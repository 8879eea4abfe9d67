"""Family-level statistics: paired exact McNemar (Appendix E), bootstrap CIs (Appendix F)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import binomtest


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Two-sided exact McNemar: binomial test on discordant pairs (b01 vs b10) at p=0.5."""
    if len(a) != len(b):
        raise ValueError("paired inputs must have equal length")
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    n = only_a + only_b
    p = 1.0 if n == 0 else float(binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)
    return {"only_a": only_a, "only_b": only_b, "discordant": n, "p_value": p}


def bootstrap_ci(values: Sequence[float], stat: Callable[[np.ndarray], float] = np.sum,
                 n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile CI from family-level resampling with replacement; seed is returned."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    stats = np.array([stat(x[i]) for i in idx])
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return {"point": float(stat(x)), "lo": float(lo), "hi": float(hi),
            "n_resamples": n_resamples, "seed": seed}


def bootstrap_order(a: Sequence[bool], b: Sequence[bool], n_resamples: int = 1000, seed: int = 0) -> dict:
    """Fraction of paired family resamples where sum(a) > sum(b)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    frac = float(np.mean(x[idx].sum(1) > y[idx].sum(1)))
    return {"frac_a_gt_b": frac, "n_resamples": n_resamples, "seed": seed}
