from math import comb

import numpy as np

from oracleladder.report.stats import bootstrap_ci, bootstrap_order, mcnemar_exact


def test_mcnemar_small():
    a = [1, 1, 1, 1, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 0, 0, 1, 1]
    r = mcnemar_exact([bool(v) for v in a], [bool(v) for v in b])
    assert (r.only_a, r.only_b) == (5, 1)
    direct = min(1.0, 2 * sum(comb(6, k) for k in range(0, 2)) / 2**6)  # 2*P(X<=1), X~Bin(6,.5)
    assert abs(r.p_value - direct) < 1e-12


def test_bootstrap_direct():
    v = [1, 0, 1, 1, 0]
    r = bootstrap_ci(v, n_resamples=50, seed=7)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 5, size=(50, 5))
    s = np.asarray(v, float)[idx].mean(1)
    assert r.lo == np.quantile(s, 0.025) and r.hi == np.quantile(s, 0.975) and r.seed == 7 and r.point == 0.6
    assert bootstrap_order([True] * 5, [False] * 5) == 1.0


# --- added: McNemar vs direct binomial, seed reproducibility, transition matrix, threshold sweep

import pytest  # noqa: E402

from oracleladder.ladder.outcomes import FamilyResults, Outcome  # noqa: E402
from oracleladder.report.stats import threshold_sweep, transition_matrix  # noqa: E402


def test_mcnemar_one_sided_pattern_and_no_discordance():
    # 0 only-a, 3 only-b: two-sided exact p = 2 * P(X <= 0 | n=3) = 2/8
    r = mcnemar_exact([False, False, False, True], [True, True, True, True])
    assert (r.only_a, r.only_b, r.discordant) == (0, 3, 3)
    assert abs(r.p_value - 2 * comb(3, 0) / 2**3) < 1e-12
    # 7 vs 1 discordant: 2 * (C(8,0)+C(8,1)) / 2^8
    a = [True] * 7 + [False] + [True] * 3
    b = [False] * 7 + [True] + [True] * 3
    r = mcnemar_exact(a, b)
    assert (r.only_a, r.only_b) == (7, 1)
    assert abs(r.p_value - 2 * (comb(8, 0) + comb(8, 1)) / 2**8) < 1e-12
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_bootstrap_seed_reproducible():
    v = [1, 0, 0, 1, 1, 0, 1, 0, 0, 0]
    r1 = bootstrap_ci(v, n_resamples=200, seed=42)
    r2 = bootstrap_ci(v, n_resamples=200, seed=42)
    assert r1 == r2 and r1.seed == 42 and r1.n_resamples == 200 and r1.point == 0.4
    a, b = [True, False, True, True, False], [False, True, True, False, False]
    o1, o2 = bootstrap_order(a, b, 300, seed=5), bootstrap_order(a, b, 300, seed=5)
    assert o1 == o2
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 5, size=(300, 5))
    x, y = np.asarray(a, float), np.asarray(b, float)
    assert o1 == float(np.mean(x[idx].sum(1) > y[idx].sum(1)))


def test_transition_matrix_counts():
    D, R, A, U = Outcome.DIRECT, Outcome.ROADMAP_NEEDED, Outcome.ANSWERS_NEEDED, Outcome.UNRECOVERED
    tm = transition_matrix([D, D, R, U, U, A], [D, R, R, U, D, U])
    assert tm.labels == ["Direct", "Primitive-Needed", "Roadmap-Needed", "Answers-Needed", "Unrecovered"]
    c = tm.counts
    assert c["Direct"]["Direct"] == 1 and c["Direct"]["Roadmap-Needed"] == 1
    assert c["Roadmap-Needed"]["Roadmap-Needed"] == 1 and c["Unrecovered"]["Unrecovered"] == 1
    assert c["Unrecovered"]["Direct"] == 1 and c["Answers-Needed"]["Unrecovered"] == 1
    assert sum(sum(r.values()) for r in c.values()) == 6
    assert tm.row_totals == {"Direct": 2, "Primitive-Needed": 0, "Roadmap-Needed": 1, "Answers-Needed": 1,
                                "Unrecovered": 2}
    assert tm.col_totals == {"Direct": 2, "Primitive-Needed": 0, "Roadmap-Needed": 2, "Answers-Needed": 0,
                                "Unrecovered": 2}
    assert tm.same == 3 and tm.n == 6
    s = transition_matrix(["x", "y", "x"], ["y", "y", "z"])
    assert s.labels == ["x", "y", "z"] and s.counts["x"] == {"x": 0, "y": 1, "z": 1} and s.same == 1
    with pytest.raises(ValueError):
        transition_matrix(["x"], ["x", "y"])
    with pytest.raises(ValueError):
        transition_matrix(["x"], ["q"], labels=["x"])


def test_threshold_sweep():
    T, F = True, False
    f1 = FamilyResults("1", {}, {"C1_direct": [T, T, F], "C2_descriptions": [T, T, T], "C3_gold_answers": [F, F, F]})
    f2 = FamilyResults("2", {}, {"C1_direct": [F, F, F], "C2_descriptions": [T, F, F], "C3_gold_answers": [T, T, F]})
    sw = threshold_sweep([f1, f2], (1, 2, 3, 4))
    assert sw[1] == {"Direct": 1, "Roadmap-Needed": 1, "Answers-Needed": 0, "Unrecovered": 0}
    assert sw[2] == {"Direct": 1, "Roadmap-Needed": 0, "Answers-Needed": 1, "Unrecovered": 0}
    assert sw[3] == {"Direct": 0, "Roadmap-Needed": 1, "Answers-Needed": 0, "Unrecovered": 1}
    assert sw[4] == {"Direct": 0, "Roadmap-Needed": 0, "Answers-Needed": 0, "Unrecovered": 2}
