"""PRIM's report.md (each table with what it counts, then the families: the primitives the student wrote
and the judge on them) and its page across students, from the typed report (`analysis.PrimReport`)."""

from __future__ import annotations

from collections.abc import Mapping

from ..report.markdown import table
from ..report.palette import number_word
from .analysis import FamilyDetail, PrimReport, Repairs, StudentPoint, Tokens
from .dimensions import DIMENSIONS
from .problems import SOLVED, UNKNOWN
from .scoring import QUADRANT_SIGNS, QUADRANTS


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.2f}"


def report_md(r: PrimReport) -> str:
    """report.md: each table with what it counts."""
    t1 = r.table1
    dims = [t1.dimensions[d] for d in DIMENSIONS.names]
    cells = [f"{100 * d.interval.point:.2f} [{100 * d.interval.lo:.2f}, {100 * d.interval.hi:.2f}]"
             if d.interval else "—" for d in dims]
    gaps = sorted({g for row in r.side_by_side.cross.values() for g in row})
    prim_rows = [*QUADRANTS.values(), SOLVED, UNKNOWN]
    lines = [
        f"# PRIM diagnosis: {r.student} on {r.roadmap_set}", "",
        f"{r.problems} problems with a gold primitive; judge {r.judge}; a primitive is correct at Score >= {r.tau}; "
        f"a problem passes a dimension with at least {r.threshold} of its samples right. "
        f"{r.missing_scores} primitive scores missing (the judge gave no readable reply): left out, never 0. "
        + ("Answers are graded by the grader alone." if r.answer_judge is None else
           f"An answer counts right where the grader accepts it or the answer judge {r.answer_judge} reads it "
           f"correct ({r.answer_judge_accepts} answers by the judge alone).")
        + ("" if r.settings is None else f" At: {r.settings}."), "",
        *[f"- **Warning:** {w}" for w in r.warnings], *([""] if r.warnings else []),
        f"## Table 1: the {number_word(len(dims))} dimensions (percent, 95% bootstrap interval over problems)", "",
        *table([*(d.title for d in DIMENSIONS), "Dig. − Disc.", "Exec. − Gen."],
               [[*cells, _signed(t1.dig_minus_disc), _signed(t1.exec_minus_gen)]]), "",
        "## Table 2 / 8: Generation and Execution under each primitive source", "",
        *table(["Setting", "Problems", "Accuracy", "Change (pp)"],
               [[s.setting, s.n, _f(s.accuracy), _signed(s.change)] for s in r.table2]), "",
        "## Table 7: each dimension by primitive family (percent)", "",
        *table(["Family", *DIMENSIONS.names], [[fam, *(_f(v[d]) for d in DIMENSIONS.names)] for fam, v in r.table7.items()]), "",
        "## Table 9: Generation failures by Discovery (D) and Execution (E, gold primitive)", "",
        *table(["Quadrant", "", "Failures"],
               [[q, QUADRANT_SIGNS.get(q, ""), n] for q, n in r.table9.items()]), "",
        f"## Table 10: rescue under the {r.rescue_source} primitive, by Digestion", "",
        *table(["Failures", "Problems", "Rescued", "Rescue rate"],
               [[k, v.n, v.rescued, _f(None if v.rate is None else 100 * v.rate)] for k, v in r.table10.items()]), "",
        "## Figure 2: problems by Discovery (D) and Generation (G)", "",
        *table(list(r.figure2), [list(r.figure2.values())]), "",
        "## Figure 12: output tokens of right and wrong answers (quartiles)", "",
        *table(["Dimension", "Right: n", "q1", "median", "q3", "Wrong: n", "q1", "median", "q3"],
               [[name, *(x for side in ("right", "wrong") for x in _quartiles(split[side]))]
                for name, split in r.figure12.items()]), "",
        *_repairs_md(r.repairs),
        "## PRIM beside the ladder: PRIM's place (rows) against the ladder's five-way gap (columns)", "",
        *table(["PRIM", *gaps], [[q, *(r.side_by_side.cross.get(q, {}).get(g, 0) for g in gaps)]
                                 for q in prim_rows if q in r.side_by_side.cross]), "",
        "## The families: the primitives the student wrote, and the judge on them", "",
        *(line for pid, d in r.families.items() for line in _family_md(pid, d, r.side_by_side.families.get(pid, {}))),
    ]
    return "\n".join(lines)


def _cell(text: str, width: int = 90) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def _family_md(pid: str, d: FamilyDetail, places: Mapping[str, str]) -> list[str]:
    gold = d.primitives.get("gold", "")
    return [f"### {pid} ({d.family or 'no family'}; PRIM {places.get('prim', UNKNOWN)}, "
            f"ladder {places.get('ladder_gap', UNKNOWN)})", "",
            f"Gold: {_cell(gold.rsplit('core_concept: ', 1)[-1]) if gold else 'none'}", "",
            *table(["Written", "k", "core_concept", "V", "gate", "mechanism", "Score", "note"],
                   [[w.target.removeprefix("prim_"), w.k,
                     _cell(w.primitive["core_concept"]) if w.primitive else "(unreadable)",
                     "—" if w.validity is None else w.validity, _f(w.gate), _f(w.mechanism), _f(w.score),
                     w.reason or (w.failure if w.failure != "none" else "") or ""] for w in d.written]), ""]


def _repairs_md(t: Repairs | None) -> list[str]:
    if t is None:
        return []
    return [f"## Tables 3 / 11: Generation failures repaired by {t.after}, by quadrant", "",
            *table(["Quadrant", "Failures", "Repaired", "Repair rate"],
                   [[q, v.n, v.rescued, _f(None if v.rate is None else 100 * v.rate)] for q, v in t.by_quadrant.items()]),
            "", f"Regressed: {t.regressed} of the {t.solved_before} problems the base solves.", ""]


def _quartiles(t: Tokens) -> list[object]:
    return [t.n, _f(t.q1), _f(t.median), _f(t.q3)]


def across_md(points: Mapping[str, StudentPoint], roadmap_set: str, judge: str) -> str:
    keys = ("D+G+", "D+G−", "D−G+", "D−G−")
    return "\n".join([
        f"# PRIM across students on {roadmap_set} (judge {judge})", "",
        "Figure 3: Discovery against Generation (percent); Figure 2: problems by Discovery (D) and Generation (G).", "",
        *table(["Student", "Discovery", "Generation", *keys],
               [[s, _f(p.discovery), _f(p.generation), *(p.composition[k] for k in keys)] for s, p in points.items()]),
        ""])
