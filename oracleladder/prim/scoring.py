"""PRIM's scoring rule (§2.3, App. A.3) and failure decomposition (Table 9), as pure functions.

Score = V · σ_gate · (0.6 + 0.4 · σ_mech), with V ∈ {0, 1} and σ ∈ {0, ½, 1}, so Score lies in
{0, .3, .4, .5, .6, .8, 1}; PrimitiveAcc = 1[Score ≥ τ], τ = 0.8 by default. A Generation failure
is placed by Discovery (D) and Execution (E): D−E+ discovery-limited, D−E− capability-limited,
D+E− execution-limited, D+E+ utilization-limited.
"""

from __future__ import annotations

TAU = 0.8
UNREADABLE_SCORE = "unreadable"  # the reason of a score of 0 given with no judge asked: no primitive to read
AGREEMENT: dict[str, float] = {"match": 1.0, "partial": 0.5, "mismatch": 0.0}  # Fig. 9's verdicts -> σ
QUADRANTS: dict[tuple[bool, bool], str] = {
    (False, True): "discovery-limited", (False, False): "capability-limited",
    (True, False): "execution-limited", (True, True): "utilization-limited",
}
QUADRANT_SIGNS: dict[str, str] = {"discovery-limited": "D−E+", "capability-limited": "D−E−",
                                  "execution-limited": "D+E−", "utilization-limited": "D+E+"}


def score(validity: int, gate: float, mechanism: float) -> float:
    """V · σ_gate · (0.6 + 0.4 · σ_mech), rounded to the rule's finite value set."""
    if validity not in (0, 1) or gate not in (0, 0.5, 1) or mechanism not in (0, 0.5, 1):
        raise ValueError(f"V must be 0 or 1 and σ 0, 0.5 or 1; got V={validity}, gate={gate}, mechanism={mechanism}")
    return round(validity * gate * (0.6 + 0.4 * mechanism), 10)


def primitive_acc(value: float, tau: float = TAU) -> bool:
    """PrimitiveAcc = 1[Score ≥ τ]."""
    return value >= tau


def quadrant(discovered: bool, executed: bool) -> str:
    """The quadrant of a Generation failure by Discovery and Execution (Table 9)."""
    return QUADRANTS[(discovered, executed)]

