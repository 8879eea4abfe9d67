"""Parent-probe outcomes (Algorithm 3), milestone test (Algorithm 2), five-way taxonomy (Section 4 / Table 16).

The primitive rung (docs/primitive.md) refines both where C2-primitive was run: the ladder reads C1,
C2-primitive, C2, C3, so a family the primitive alone recovers is Primitive-Needed, and a roadmap gap
(milestone test passed) that the primitive alone closes is a Primitive-gap. Where C2-primitive was not
run, its rung is skipped and the labels are the paper's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from ..schemas.conditions import LADDER


class Outcome(str, Enum):
    DIRECT = "Direct"
    PRIMITIVE_NEEDED = "Primitive-Needed"  # only where C2-primitive was run
    ROADMAP_NEEDED = "Roadmap-Needed"
    ANSWERS_NEEDED = "Answers-Needed"
    UNRECOVERED = "Unrecovered"


class Gap(str, Enum):
    """Five-way taxonomy with Direct counted once (Table 16 column order)."""

    DIRECT = "Direct"
    PRIMITIVE = "Primitive-gap"  # a roadmap gap the primitive alone closes (only where C2-primitive was run)
    ROADMAP = "Roadmap-gap"
    MS_EXEC = "Milestone-execution-gap"
    COMPOSITION = "Composition-gap"
    MISSING_MS = "Missing-milestone-gap"
    CAPABILITY = "Capability-gap"


def ladder_outcomes(primitive: bool) -> list[Outcome]:
    """The outcomes a ladder can reach: Primitive-Needed only where C2-primitive was run."""
    return [o for o in Outcome if primitive or o is not Outcome.PRIMITIVE_NEEDED]


NOT_DETERMINED = "Not determined"  # no parent-probe outcome: a C1-C3 rung it has to read was not run


def rungs_read(outcome: Outcome) -> list[str]:
    """The rungs an outcome is read from: the rungs run by default below its own, and its own (Unrecovered:
    every rung run by default); an optional rung (the primitive's), where it was run, is read on the way."""
    if outcome is Outcome.UNRECOVERED:
        return list(LADDER.parent_probes)
    own = next(s for s in LADDER.rungs if s.outcome == outcome.value)
    return [s.name for s in LADDER.rungs if not s.optional and (s.rung or 0) < (own.rung or 0)] + [own.name]


def ladder_gaps(primitive: bool) -> list[Gap]:
    """The five-way labels (Direct once) a ladder can reach: Primitive-gap only where C2-primitive was run."""
    return [g for g in Gap if primitive or g is not Gap.PRIMITIVE]


@dataclass
class FamilyResults:
    pid: str
    stage0: dict[str, list[bool]] = field(default_factory=dict)  # tested (non-Integrate) milestones
    ladder: dict[str, list[bool]] = field(default_factory=dict)  # keyed by condition name (schemas.LADDER)


def solve_rate(rolls: list[bool]) -> float:
    return sum(rolls) / len(rolls) if rolls else 0.0


def milestone_test(stage0: dict[str, list[bool]], mode: str = "strict") -> bool:
    """strict: every tested milestone solved >=1/K (Alg. 2); fraction: at least half of them."""
    solved = [any(r) for r in stage0.values()]
    if not solved:
        return False
    if mode == "strict":
        return all(solved)
    if mode == "fraction":
        return 2 * sum(solved) >= len(solved)
    raise ValueError(mode)


def solved(rolls: list[bool], tau: int = 1) -> bool:
    return sum(rolls) >= tau


def parent_outcome(ladder: dict[str, list[bool]], tau: int = 1) -> Outcome:
    """Algorithm 3: the outcome of the first rung from the bottom, C1, C2, C3, with >= tau correct
    (C2-primitive between C1 and C2, where run)."""
    for rung in LADDER.rungs:
        if solved(ladder.get(rung.name, []), tau):
            return Outcome(rung.outcome)
    return Outcome.UNRECOVERED


def known_outcome(f: FamilyResults, tau: int = 1) -> Outcome | None:
    """Algorithm 3, but None when a ladder rung it has to look at was not run (the outcome is unknown,
    not Unrecovered): C1 not run, or C1 fails and C2 not run, or C1 and C2 fail and C3 not run."""
    out = parent_outcome(f.ladder, tau)
    return out if all(f.ladder.get(c) for c in rungs_read(out)) else None


def outcome_label(f: FamilyResults, tau: int = 1) -> str:
    """The family's parent-probe outcome as every output prints it: its name, or "Not determined"."""
    out = known_outcome(f, tau)
    return out.value if out else NOT_DETERMINED


def outcome_counts(fams: Iterable[FamilyResults], tau: int, primitive: bool) -> dict[str, int]:
    """Families per `outcome_label`: every outcome the ladder can reach, and "Not determined" where some are."""
    counts = Counter(outcome_label(f, tau) for f in fams)
    keys = [o.value for o in ladder_outcomes(primitive)] + ([NOT_DETERMINED] if counts[NOT_DETERMINED] else [])
    return {k: counts[k] for k in keys}


def taxonomy(passed: bool, outcome: Outcome) -> Gap:
    if outcome is Outcome.DIRECT:
        return Gap.DIRECT
    if passed:
        return {Outcome.PRIMITIVE_NEEDED: Gap.PRIMITIVE, Outcome.ROADMAP_NEEDED: Gap.ROADMAP, Outcome.ANSWERS_NEEDED: Gap.MS_EXEC,
                Outcome.UNRECOVERED: Gap.COMPOSITION}[outcome]
    return Gap.CAPABILITY if outcome is Outcome.UNRECOVERED else Gap.MISSING_MS


def classify(fam: FamilyResults, tau: int = 1, mode: str = "strict") -> Gap:
    return taxonomy(milestone_test(fam.stage0, mode), parent_outcome(fam.ladder, tau))


def taxonomy_from_fingerprints(all_fp: dict[str, int], pass_fp: dict[str, int]) -> dict[Gap, int]:
    """Table 14 fingerprints (keys D,R,A,U, and P where C2-primitive was run; all families and passing
    families) -> Table 16 counts."""
    p_all, p_pass = all_fp.get("P", 0), pass_fp.get("P", 0)
    return {
        Gap.DIRECT: all_fp["D"],
        **({Gap.PRIMITIVE: p_pass} if "P" in all_fp else {}),
        Gap.ROADMAP: pass_fp["R"],
        Gap.MS_EXEC: pass_fp["A"],
        Gap.COMPOSITION: pass_fp["U"],
        Gap.MISSING_MS: (p_all - p_pass) + (all_fp["R"] - pass_fp["R"]) + (all_fp["A"] - pass_fp["A"]),
        Gap.CAPABILITY: all_fp["U"] - pass_fp["U"],
    }


def results_from_rollouts(
    families: Sequence[tuple[str, Sequence[int]]], verdicts: Iterable[tuple[str, str, int, bool]]
) -> list[FamilyResults]:
    """Per family (pid, tested milestone indices), the K verdicts of each Stage 0 milestone
    ("m<i>") and of each condition, from (pid, target, k, accepted) tuples. Families with no
    rollout are left out; a later verdict for the same (pid, target, k) wins."""
    by_family: dict[str, dict[str, dict[int, bool]]] = {}
    for pid, target, k, ok in verdicts:
        by_family.setdefault(pid, {}).setdefault(target, {})[k] = ok
    results = []
    for pid, tested in families:
        targets = by_family.get(pid)
        if not targets:
            continue
        rolls = {t: [ok for _, ok in sorted(ks.items())] for t, ks in targets.items()}
        stage0 = {f"m{i}": rolls.get(f"m{i}", []) for i in tested}
        ladder = {t: r for t, r in rolls.items() if not t.startswith("m")}
        results.append(FamilyResults(pid, stage0, ladder))
    return results
