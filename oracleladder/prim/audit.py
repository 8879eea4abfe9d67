"""The judge's own audit (PRIM App. A.3): a seeded sample of a judge's scored primitives, half it
judged correct and half incorrect, goes to a judge-blind sheet (CSV: the problem, the reference
solution, the gold primitive, the model's primitive, and a label for a person: ``correct`` or
``incorrect``); which score the judge gave is kept in a key file beside it. The filled-in sheet reads
back into the agreement of judge and person and Cohen's kappa (the paper: 95.5%, κ = 0.91).

An unreadable primitive (scored 0 without a judge) and a missing score are not the judge's verdicts
and are never sampled.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from ..report.stats import cohen_kappa
from ..schemas.prim import PrimPrimitive
from ..schemas.sheets import SheetError, read_key, read_numbered, write_rows
from ..store import PrimScore
from .probe import labelled
from .scoring import primitive_acc

COLUMNS = ("case", "problem", "reference_solution", "gold_primitive", "model_primitive", "label", "comment")
LABELS = ("correct", "incorrect")


class _Case(BaseModel):
    judge_correct: bool


class _Key(BaseModel):
    """What `read_sheet` reads of the key file."""

    cases: dict[str, _Case]


def key_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".key.json")


def judged(scores: Sequence[PrimScore]) -> list[PrimScore]:
    """The scores that are the judge's verdicts: scored, not for an unreadable primitive."""
    return [s for s in scores if s.status == "scored" and s.reason != "unreadable"]


def draw(scores: Sequence[PrimScore], n: int, seed: int, tau: float) -> list[PrimScore]:
    """A seeded sample of ``n``: half of them judged correct, half incorrect, as many as there are."""
    ordered = sorted(judged(scores), key=lambda s: (s.pid, s.target, s.k))
    rng = random.Random(seed)
    right = [s for s in ordered if primitive_acc(s.score or 0.0, tau)]
    wrong = [s for s in ordered if not primitive_acc(s.score or 0.0, tau)]
    take_right = min(len(right), max(n // 2, n - len(wrong)))
    sample = rng.sample(right, take_right) + rng.sample(wrong, min(len(wrong), n - take_right))
    rng.shuffle(sample)
    return sample


def write_sheet(sheet: Path, sample: Sequence[PrimScore], *, problems: Mapping[str, str],
                solutions: Mapping[str, str], golds: Mapping[str, PrimPrimitive],
                written: Mapping[tuple[str, str, int], Mapping[str, str]], meta: dict, tau: float) -> int:
    """The blind sheet and its key; returns the number of cases."""
    rows, cases = [], {}
    for i, s in enumerate(sample, 1):
        case = f"case-{i:03d}"
        rows.append([case, problems[s.pid], solutions.get(s.pid, ""), golds[s.pid].labelled(),
                     labelled(written[(s.pid, s.target, s.k)]), "", ""])
        cases[case] = {"pid": s.pid, "target": s.target, "k": s.k, "score": s.score,
                       "judge_correct": primitive_acc(s.score or 0.0, tau)}
    write_rows(sheet, COLUMNS, rows)  # a cell a spreadsheet would evaluate is written as text
    key_path(sheet).write_text(json.dumps({**meta, "tau": tau, "cases": cases}, indent=2))
    return len(cases)


def read_sheet(sheet: Path) -> dict:
    """The filled-in sheet against its key: labelled cases, agreement, kappa, the disagreements."""
    key = key_path(sheet)
    meta = read_key(key, _Key)
    judge, person, disagree = [], [], []
    for line, row in read_numbered(sheet, ("case", "label")):
        case, label = row.get("case"), (row.get("label") or "").strip().lower()
        if case not in meta["cases"]:
            raise SheetError(f"{sheet}:{line}: case {case!r} is not in {key.name}")
        if not label:
            continue
        if label not in LABELS:
            raise SheetError(f"{sheet}:{line}: label '{label}' is not one of {', '.join(LABELS)} (or blank)")
        j = meta["cases"][case]["judge_correct"]
        judge.append(j)
        person.append(label == "correct")
        if j != (label == "correct"):
            disagree.append(case)
    n = len(judge)
    return {"judge": meta.get("judge"), "student": meta.get("student"), "tau": meta.get("tau"),
            "cases": len(meta["cases"]), "labelled": n,
            "agreement": (n - len(disagree)) / n if n else None,
            "kappa": cohen_kappa(judge, person) if n else None, "disagreements": disagree}
