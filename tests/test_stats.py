import numpy as np
from math import comb

from oracleladder.probe.stats import bootstrap_ci, bootstrap_order, mcnemar_exact


def test_mcnemar_small():
    a = [1, 1, 1, 1, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 0, 0, 1, 1]
    r = mcnemar_exact([bool(v) for v in a], [bool(v) for v in b])
    assert (r["only_a"], r["only_b"]) == (5, 1)
    direct = min(1.0, 2 * sum(comb(6, k) for k in range(0, 2)) / 2**6)  # 2*P(X<=1), X~Bin(6,.5)
    assert abs(r["p_value"] - direct) < 1e-12


def test_bootstrap_direct():
    v = [1, 0, 1, 1, 0]
    r = bootstrap_ci(v, n_resamples=50, seed=7)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 5, size=(50, 5))
    s = np.asarray(v, float)[idx].sum(1)
    assert r["lo"] == np.quantile(s, 0.025) and r["hi"] == np.quantile(s, 0.975) and r["seed"] == 7
    assert bootstrap_order([True] * 5, [False] * 5)["frac_a_gt_b"] == 1.0
