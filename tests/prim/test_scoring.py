"""PRIM's scoring rule on hand-built cases: every (V, gate, mechanism) lands on the value set
{0, .3, .4, .5, .6, .8, 1} and is primitive-correct only at ≥ τ; every quadrant; kappa on known pairs."""

from __future__ import annotations

import itertools

import pytest

from oracleladder.prim.scoring import primitive_acc, quadrant, score
from oracleladder.report.stats import cohen_kappa

# hand-computed: V · gate · (0.6 + 0.4 · mechanism)
CASES = {
    (1, 1, 1): 1.0, (1, 1, 0.5): 0.8, (1, 1, 0): 0.6,
    (1, 0.5, 1): 0.5, (1, 0.5, 0.5): 0.4, (1, 0.5, 0): 0.3,
    (1, 0, 1): 0.0, (1, 0, 0.5): 0.0, (1, 0, 0): 0.0,
}


@pytest.mark.parametrize("v,gate,mech", list(itertools.product((0, 1), (0, 0.5, 1), (0, 0.5, 1))))
def test_score_and_accuracy_at_every_verdict(v: int, gate: float, mech: float) -> None:
    expected = CASES[(1, gate, mech)] if v else 0.0
    assert score(v, gate, mech) == expected
    assert primitive_acc(expected) is (expected in (0.8, 1.0))


def test_the_value_set_is_the_papers() -> None:
    values = {score(v, g, m) for v, g, m in itertools.product((0, 1), (0, 0.5, 1), (0, 0.5, 1))}
    assert values == {0, 0.3, 0.4, 0.5, 0.6, 0.8, 1}


def test_tau_is_configurable() -> None:
    assert primitive_acc(0.6, tau=0.6) and not primitive_acc(0.5, tau=0.6) and not primitive_acc(0.8, tau=0.9)


@pytest.mark.parametrize("bad", [(2, 1, 1), (1, 0.7, 1), (1, 1, -0.5)])
def test_a_verdict_off_the_scale_is_refused(bad: tuple) -> None:
    with pytest.raises(ValueError):
        score(*bad)


def test_every_quadrant() -> None:
    assert [quadrant(d, e) for d in (False, True) for e in (True, False)] == [
        "discovery-limited", "capability-limited", "utilization-limited", "execution-limited"]


def test_kappa_on_known_pairs() -> None:
    # 2x2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = 0.5 -> kappa 0.4 (the textbook example)
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])
