"""The anchor screen and the structural filter (paper, Section 3 and Appendix B; Appendix N's variant).

Default rule: a family is kept when the anchor fails the parent in all K direct (C1) attempts and solves
every tested non-INTEGRATE milestone in at least one of K Stage 0 attempts. ``direct-only``: kept when the
anchor fails all K direct attempts; the milestone test is only measured. The structural filter then keeps
families with at least two tested non-INTEGRATE milestones after the leak rule (Appendix T).

A raw pool (`ladder screen POOL`) is screened before any compile, under ``direct-only`` only (the
default rule needs roadmaps): a problem the anchor solves directly is never sent to the teacher.

A verdict reads only the rollouts of the screen's own probe run (its K, budget and grader), so rollouts of
the same anchor at other settings never mix in. A job without a graded answer (a failed call, a grading
failure) makes the family ``incomplete``: a machinery failure is neither a pass nor a fail of the anchor.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..ladder.outcomes import FamilyResults, solve_rate
from ..schemas import Family
from ..schemas.conditions import C1
from ..store import ScreenVerdict
from ..validators.leak import leak_level
from ..validators.reference import CHECK as REFERENCE_CHECK, answer_problem

DIRECT = C1.name  # the screen's one probe: the parent asked directly

Rule = Literal["default", "direct-only"]
RULES: tuple[Rule, ...] = ("default", "direct-only")
RAW = "pool:"  # a raw screen's source prefix: the pool was screened before any compile
# verdicts, in funnel order; only KEPT families enter the set. A compiled family's reference answer was
# checked before its teacher call; an imported one's is checked here.
KEPT, INCOMPLETE, SOLVED_DIRECTLY, MILESTONE_UNSOLVED, STRUCTURAL = (
    "kept", "incomplete", "solved_directly", "milestone_unsolved", "structural")


def structural_milestones(family: Family) -> list[int]:
    """Indices of the tested non-INTEGRATE milestones whose gold does not restate the parent answer."""
    return [i for i, m in family.tested() if leak_level(m.answer, family.parent_answer) is None]


def judge(family: Family, results: FamilyResults, k: int, rule: Rule) -> tuple[str, str, int, dict[str, float]]:
    """(verdict, reason, correct C1 attempts, Stage 0 solve rate per tested milestone) of one family."""
    targets = [f"m{i}" for i, _ in family.tested()]
    direct = results.ladder.get(DIRECT, [])
    stage0 = {t: results.stage0.get(t, []) for t in targets}
    rates = {t: solve_rate(rolls) for t, rolls in stage0.items()}
    unusable = answer_problem(family.parent_answer)
    if unusable:
        return REFERENCE_CHECK, unusable, sum(direct), rates
    lacking = sum(k - len(rolls) for rolls in [direct, *stage0.values()])
    if lacking:
        return (INCOMPLETE, f"{lacking} of {k * (1 + len(targets))} screen attempts have no graded answer "
                            "(failed calls or grading failures): rerun `ladder screen`", sum(direct), rates)
    if any(direct):
        return SOLVED_DIRECTLY, f"the anchor solved the parent directly in {sum(direct)} of {k} attempts", sum(direct), rates
    unsolved = [t for t, rolls in stage0.items() if not any(rolls)]
    if rule == "default" and (unsolved or not targets):
        attempts = f"{k} Stage 0 attempt{'s' if k > 1 else ''}"
        why = (f"the anchor never solved milestone{'s' if len(unsolved) > 1 else ''} {', '.join(unsolved)} in "
               f"{attempts}" if unsolved else "the family has no tested milestone")
        return MILESTONE_UNSOLVED, why, 0, rates
    kept = structural_milestones(family)
    if len(kept) < 2:
        return STRUCTURAL, (f"{len(kept)} tested non-INTEGRATE milestone(s) after the leak rule; "
                            "the set needs at least 2"), 0, rates
    return KEPT, f"anchor fails all {k} direct attempts" + (
        " and solves every tested milestone alone" if rule == "default" else ""), 0, rates


def raw_source(domain: str) -> str:
    """The source a raw screen's verdicts and rollouts are filed under: the pool's domain."""
    return RAW + domain


def judge_direct(unusable: str | None, direct: Sequence[bool], k: int, anchor: str) -> tuple[str, str, int]:
    """(verdict, reason, correct attempts) of a raw problem under ``direct-only``: kept when the anchor
    fails all K direct attempts. An attempt without a graded answer leaves it unscreened (incomplete),
    never solved nor unsolved, so it is not compiled."""
    if unusable:
        return REFERENCE_CHECK, unusable, 0
    if len(direct) < k:
        return (INCOMPLETE, f"{k - len(direct)} of {k} direct attempts have no graded answer (failed calls or "
                            "grading failures): unscreened, so not compiled; rerun `ladder screen`", sum(direct))
    if any(direct):
        return SOLVED_DIRECTLY, f"{anchor} solved it directly in {sum(direct)} of {k} attempts", sum(direct)
    return KEPT, f"{anchor} fails all {k} direct attempts", 0


def screen(families: Sequence[Family], results: Sequence[FamilyResults], *, set_name: str, anchor: str,
           rule: Rule, k: int, max_tokens: int, run_id: str) -> list[ScreenVerdict]:
    by_pid = {r.pid: r for r in results}
    out = []
    for family in families:
        verdict, reason, direct, rates = judge(family, by_pid.get(family.pid, FamilyResults(family.pid)), k, rule)
        out.append(ScreenVerdict(set_name=set_name, pid=family.pid, source=family.provenance.roadmap_set,
                                 anchor=anchor, rule=rule, k=k, max_tokens=max_tokens, verdict=verdict,
                                 reason=reason, direct=direct, stage0=rates, run_id=run_id))
    return out
