"""Compare two roadmap sets of the same problems for one student (paper Appendix P, Tables 32-34).

The two sets come from two teachers or two granularities. Everything is computed on the pids
present in all four inputs (both roadmap sets and both result sets), in the order of `a`.
`comparison` computes the typed tables; `compare` is their JSON form (compare.json's, what the
Experiment API returns); `write_compare` writes compare.json and compare.md.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import SerializerFunctionWrapHandler, model_serializer

from ..ladder.outcomes import FamilyResults, Gap, milestone_test
from ..schemas.conditions import C2, C3
from ..schemas.models import Family, Milestone
from ..schemas.types import MilestoneType
from .markdown import num, pct, table
from .palette import NOT_CLASSIFIED, n_families
from .stats import Transitions, transition_matrix
from .tables import NOT_RUN, Frozen, gap_label

T = TypeVar("T")


class Sides(Frozen, Generic[T]):
    """One value per roadmap set: ``a`` and ``b``."""

    a: T
    b: T


class Structure(Frozen):
    """Table 32 for one roadmap set."""

    families: int
    milestones_per_family: float | None
    tested_per_family: float | None
    families_with_integrate: int
    type_counts: dict[str, int]
    type_shares: dict[str, float | None]
    atomic_share: float | None
    median_gold_length: int | float | None  # a median of an even count of lengths can be a half
    golds: int


class Agreement(Frozen):
    """Table 33, one condition (or both): families recovered the same way under the two sets. A field
    that does not apply (all but status and n when not run; the recovery counts for both) is left out."""

    status: str
    n: int
    recovered_a: int | None = None
    recovered_b: int | None = None
    same: int | None = None
    same_share: float | None = None
    disagree: int | None = None
    disagree_1_vs_0: int | None = None

    @model_serializer(mode="wrap")
    def _json(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class Agreements(Frozen):
    C2: Agreement
    C3: Agreement
    both: Agreement


class MilestonesSolved(Frozen):
    tested: int
    solved: int


class FiveWayTest(Frozen):
    """Table 34 under one milestone test: the label transitions, and the families passing it in each set."""

    transitions: Transitions
    same: int
    n: int
    pass_a: int
    pass_b: int


class FiveWayRow(Frozen):
    a: str
    b: str
    strict: int
    fraction: int


class FiveWay(Frozen):
    strict: FiveWayTest
    fraction: FiveWayTest
    rows: list[FiveWayRow]  # the transitions present under either test, in Table 16 order of (from, to)


class Dropped(Frozen):
    a_only: list[str]
    b_only: list[str]


class Comparison(Frozen):
    k: int
    pids: list[str]
    n: int
    dropped: Dropped
    structure: Sides[Structure]
    agreement: Agreements
    per_attempt: Sides[dict[str, float | None]]  # C2 and C3 per-attempt success
    stage0: Sides[MilestonesSolved]
    five_way: FiveWay
    settings: dict[str, str] = {}  # per roadmap set, the settings of the student's results on it
    teacher_prompts: dict[str, list[str]] = {}  # per roadmap set, the teacher prompts it was compiled with
    # the student's answers cut off or unreadable on each set, as `tables.cut_off_warnings` says them
    warnings: list[str] = []


def prompt_warning(c: Comparison | dict) -> str | None:
    """One line when the two sets were compiled with different teacher prompts (a difference between them
    could be the prompt's), else None."""
    prompts = (c.teacher_prompts if isinstance(c, Comparison) else c.get("teacher_prompts", {}))
    said = {name: ", ".join(p) or "not stated (imported)" for name, p in prompts.items()}
    if len(set(said.values())) < 2:
        return None
    return ("the two sets were compiled with different teacher prompts (" + "; ".join(
        f"{name}: {p}" for name, p in said.items()) + "): a difference between them may be the prompt's")


def _all_milestones(f: Family) -> list[Milestone]:
    ms = list(f.milestones)
    if f.integrate is not None:  # the private INTEGRATE step, kept outside `milestones`
        ms.append(f.integrate)
    return ms


def structure(fams: list[Family], is_atomic: Callable[[str], bool]) -> Structure:
    """Type shares count all milestones incl. the private INTEGRATE step; atomic share and median length
    are over the gold answers of the tested milestones."""
    n = len(fams)
    allm = [m for f in fams for m in _all_milestones(f)]
    tested = [m for f in fams for _, m in f.tested()]
    types = {t.value: 0 for t in MilestoneType}
    for m in allm:
        types[MilestoneType(m.type).value] += 1
    golds = [m.answer for m in tested]
    return Structure(
        families=n,
        milestones_per_family=len(allm) / n if n else None,
        tested_per_family=len(tested) / n if n else None,
        families_with_integrate=sum(1 for f in fams if f.integrate is not None
                                    or any(m.type is MilestoneType.INTEGRATE for m in f.milestones)),
        type_counts=types,
        type_shares={t: (c / len(allm) if allm else None) for t, c in types.items()},
        atomic_share=(sum(1 for g in golds if is_atomic(g)) / len(golds)) if golds else None,
        median_gold_length=statistics.median(len(g) for g in golds) if golds else None,
        golds=len(golds),
    )


def _hits(r: FamilyResults, cond: str) -> int | None:
    rolls = r.ladder.get(cond)
    return sum(rolls) if rolls else None


def _recovery(pairs: list[tuple[int, int]]) -> Agreement:
    if not pairs:
        return Agreement(status=NOT_RUN, n=0)
    same = sum((p >= 1) == (q >= 1) for p, q in pairs)
    return Agreement(status="ok", n=len(pairs), recovered_a=sum(p >= 1 for p, _ in pairs),
                     recovered_b=sum(q >= 1 for _, q in pairs), same=same, same_share=same / len(pairs),
                     disagree=len(pairs) - same, disagree_1_vs_0=sum(1 for p in pairs if p in ((1, 0), (0, 1))))


def agreement(ra: list[FamilyResults], rb: list[FamilyResults]) -> Agreements:
    """Table 33: per-family recovery (>= 1 of K) under C2, C3 and both; disagreements at 1 vs 0 of K."""
    by_cond = {}
    for cond in (C2.name, C3.name):
        pairs = [(_hits(x, cond), _hits(y, cond)) for x, y in zip(ra, rb)]
        by_cond[cond] = _recovery([(p, q) for p, q in pairs if p is not None and q is not None])
    both = []
    for x, y in zip(ra, rb):
        h = [v for v in (_hits(x, C2.name), _hits(y, C2.name), _hits(x, C3.name), _hits(y, C3.name)) if v is not None]
        if len(h) == 4:  # both rungs read in both sets
            both.append(((h[0] >= 1) == (h[1] >= 1)) and ((h[2] >= 1) == (h[3] >= 1)))
    return Agreements(C2=by_cond[C2.name], C3=by_cond[C3.name],
                      both=Agreement(status="ok", n=len(both), same=sum(both), same_share=sum(both) / len(both))
                      if both else Agreement(status=NOT_RUN, n=0))


def five_way(ra: list[FamilyResults], rb: list[FamilyResults]) -> FiveWay:
    """Table 34: five-way labels (tau = 1) under the strict and the fraction milestone test; "Not
    classified" where a family's label cannot be known (`gap_label`: a rung or Stage 0 it reads was not run)."""
    tests, by_mode = {}, {mode: ([gap_label(x, 1, mode) for x in ra], [gap_label(y, 1, mode) for y in rb])
                          for mode in ("strict", "fraction")}
    labels = [g.value for g in Gap] + ([NOT_CLASSIFIED] if any(NOT_CLASSIFIED in la + lb for la, lb in by_mode.values()) else [])
    for mode, (la, lb) in by_mode.items():
        tm = transition_matrix(la, lb, labels=labels)
        tests[mode] = FiveWayTest(transitions=tm, same=tm.same, n=tm.n,
                                  pass_a=sum(milestone_test(x.stage0, mode) for x in ra),
                                  pass_b=sum(milestone_test(y.stage0, mode) for y in rb))
    strict, fraction = tests["strict"].transitions.counts, tests["fraction"].transitions.counts
    rows = [FiveWayRow(a=fa, b=fb, strict=strict[fa][fb], fraction=fraction[fa][fb])
            for fa in labels for fb in labels if strict[fa][fb] or fraction[fa][fb]]
    return FiveWay(strict=tests["strict"], fraction=tests["fraction"], rows=rows)


def _stage0_solve(rs: list[FamilyResults]) -> MilestonesSolved:
    ms = [r for x in rs for r in x.stage0.values() if r]
    return MilestonesSolved(tested=len(ms), solved=sum(1 for r in ms if any(r)))


def _per_attempt(rs: list[FamilyResults], cond: str) -> float | None:
    rolls = [v for x in rs for v in x.ladder.get(cond, [])]
    return sum(rolls) / len(rolls) if rolls else None


def comparison(a: list[Family], b: list[Family], results_a: list[FamilyResults], results_b: list[FamilyResults],
               *, is_atomic: Callable[[str], bool], k: int) -> Comparison:
    fa = {f.pid: f for f in a}
    fb = {f.pid: f for f in b}
    ra = {r.pid: r for r in results_a}
    rb = {r.pid: r for r in results_b}
    pids = [f.pid for f in a if f.pid in fb and f.pid in ra and f.pid in rb]
    ra_l = [ra[p] for p in pids]
    rb_l = [rb[p] for p in pids]
    return Comparison(
        k=k, pids=pids, n=len(pids),
        dropped=Dropped(a_only=sorted(set(fa) - set(pids)), b_only=sorted(set(fb) - set(pids))),
        structure=Sides[Structure](a=structure([fa[p] for p in pids], is_atomic), b=structure([fb[p] for p in pids], is_atomic)),
        agreement=agreement(ra_l, rb_l),
        per_attempt=Sides[dict[str, float | None]](a={"C2": _per_attempt(ra_l, C2.name), "C3": _per_attempt(ra_l, C3.name)},
                          b={"C2": _per_attempt(rb_l, C2.name), "C3": _per_attempt(rb_l, C3.name)}),
        stage0=Sides[MilestonesSolved](a=_stage0_solve(ra_l), b=_stage0_solve(rb_l)),
        five_way=five_way(ra_l, rb_l),
    )


def compare(a: list[Family], b: list[Family], results_a: list[FamilyResults], results_b: list[FamilyResults],
            *, is_atomic: Callable[[str], bool], k: int) -> dict:
    """The comparison (`comparison`) in compare.json's form."""
    return comparison(a, b, results_a, results_b, is_atomic=is_atomic, k=k).model_dump()


# ---------------------------------------------------------------- compare.md

def _title(c: Comparison, name_a: str, name_b: str, student: str | None) -> list[str]:
    L = [f"# Roadmap comparison: {name_a} vs {name_b}" + (f" (student {student})" if student else ""), "",
         f"{n_families(c.n)} common to both roadmap sets and both result sets; K = {c.k}.", ""]
    if c.settings:
        L += ["At: " + "; ".join(f"{name}: {at}" for name, at in c.settings.items()) + ".", ""]
    warning = prompt_warning(c)
    if warning:
        L += [f"**Warning:** {warning}.", ""]
    if c.warnings:
        L += [f"- **Warning:** {w}" for w in c.warnings] + [""]
    if c.dropped.a_only or c.dropped.b_only:
        L += [f"Left out: {n_families(len(c.dropped.a_only))} only in {name_a} (or without results), "
              f"{len(c.dropped.b_only)} only in {name_b}.", ""]
    return L


def structure_md(c: Comparison, name_a: str, name_b: str) -> list[str]:
    """Table 32."""
    sa, sb = c.structure.a, c.structure.b
    rows: list[Sequence[object]] = [["Milestones per family, all types", num(sa.milestones_per_family), num(sb.milestones_per_family)],
            ["Tested milestones per family", num(sa.tested_per_family), num(sb.tested_per_family)],
            ["Families with a private INTEGRATE step", sa.families_with_integrate, sb.families_with_integrate]]
    types = sorted(sa.type_shares, key=lambda t: -((sa.type_shares[t] or 0) + (sb.type_shares[t] or 0)))
    rows += [[f"{t.title()} share", pct(sa.type_shares[t]), pct(sb.type_shares[t])] for t in types]
    rows += [["Atomic share of tested gold answers", pct(sa.atomic_share), pct(sb.atomic_share)],
             ["Median gold length (characters)", num(sa.median_gold_length, "{:g}"), num(sb.median_gold_length, "{:g}")]]
    L = ["## Roadmap structure (Table 32)", "", *table(["", name_a, name_b], rows),
         "", "Type shares count all milestones, including the private INTEGRATE step when the family carries it."]
    bare = [nm for nm, st in ((name_a, sa), (name_b, sb)) if st.families and not st.families_with_integrate]
    if bare:
        L += [f"{' and '.join(bare)}: no INTEGRATE step (released families keep only the tested milestones), so "
              "the all-types count equals the tested count."]
    return L + [""]


def agreement_md(c: Comparison, name_a: str, name_b: str) -> list[str]:
    """Table 33."""
    ag, pa, sa, sb = c.agreement, c.per_attempt, c.structure.a, c.structure.b

    def same(x: Agreement) -> str:
        return NOT_RUN if x.status == NOT_RUN else f"{x.same} of {x.n} ({pct(x.same_share, digits=0)})"

    def rec(x: Agreement) -> str:
        return NOT_RUN if x.status == NOT_RUN else f"{x.recovered_a} / {x.recovered_b}"

    def oz(x: Agreement) -> str:
        return NOT_RUN if x.status == NOT_RUN else f"{x.disagree_1_vs_0} of {x.disagree}"
    rows = [["Tested milestones per family", f"{num(sa.tested_per_family)} / {num(sb.tested_per_family)}"],
            ["Families recovered under C2", rec(ag.C2)],
            ["Families recovered under C3", rec(ag.C3)],
            ["Per-attempt success C2", f"{pct(pa.a['C2'])} / {pct(pa.b['C2'])}"],
            ["Per-attempt success C3", f"{pct(pa.a['C3'])} / {pct(pa.b['C3'])}"],
            ["Same C2 outcome", same(ag.C2)],
            ["Same C3 outcome", same(ag.C3)],
            ["Same C2 and C3 outcomes", same(ag.both)],
            [f"Disagreements at 1 vs. 0 of {c.k} (C2, C3)", f"{oz(ag.C2)}, {oz(ag.C3)}"]]
    return [f"## Per-family recovery (Table 33; recovered = at least 1 of {c.k} correct)", "",
            *table(["", f"{name_a} / {name_b}"], rows), ""]


def five_way_md(c: Comparison, name_a: str, name_b: str) -> list[str]:
    """Table 34, and the tested milestones each set's student solved alone."""
    fw, s0a, s0b = c.five_way, c.stage0.a, c.stage0.b
    rows = [[r.a, r.b, r.strict, r.fraction] for r in fw.rows]
    rows.append(["Families with the same label", "", fw.strict.same, fw.fraction.same])
    rows.append([f"Families passing the milestone test ({name_a} / {name_b})", "",
                 f"{fw.strict.pass_a} / {fw.strict.pass_b}", f"{fw.fraction.pass_a} / {fw.fraction.pass_b}"])
    return ["## Five-way labels (Table 34)", "",
            "Rows list each transition from the first set's label to the second's. Strict: every tested milestone "
            "solved alone; fraction: at least half of them.", "",
            *table([f"{name_a} label", f"{name_b} label", "Strict test", "Fraction score"], rows),
            "", f"Tested milestones solved alone: {s0a.solved} of {s0a.tested} ({name_a}), "
            f"{s0b.solved} of {s0b.tested} ({name_b}).", "",
            "The labels also use C1, whose prompt does not depend on the roadmap: when both sets were probed with "
            "the same sampling settings, the store's cache gives them the same C1 attempts (the paper samples C1 "
            "afresh for the second set).", ""]


def compare_md(c: Comparison, name_a: str, name_b: str, student: str | None = None) -> str:
    return "\n".join(_title(c, name_a, name_b, student) + structure_md(c, name_a, name_b)
                     + agreement_md(c, name_a, name_b) + five_way_md(c, name_a, name_b))


def write_compare(result: Comparison | dict, out_dir: str | Path, name_a: str = "A", name_b: str = "B",
                  student: str | None = None) -> None:
    """compare.json and compare.md in ``out_dir``, from the comparison or its JSON form (`compare`)."""
    c = Comparison.model_validate(result)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps({"names": [name_a, name_b], "student": student, **c.model_dump()},
                                                 indent=2))
    (out / "compare.md").write_text(compare_md(c, name_a, name_b, student))
