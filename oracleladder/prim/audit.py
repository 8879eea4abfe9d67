"""The judge's own audit (PRIM App. A.3): a seeded sample of a judge's scored primitives, half it
judged correct and half incorrect, goes to a judge-blind sheet (CSV: the problem, the reference
solution, the gold primitive, the model's primitive, and a label for a person: ``correct`` or
``incorrect``); which score the judge gave is kept in a key file beside it. The filled-in sheet reads
back into the agreement of judge and person and Cohen's kappa (the paper: 95.5%, κ = 0.91).

The alternative-route audit (App. A.3, ``routes``): each problem is scored against one gold primitive,
so a primitive on a different but valid route may be under-credited. A seeded sample of the primitives
the judge scored incorrect goes to the same blind sheet, labelled ``alternative`` (a valid route the
single gold misses) or ``none``; read back, the share of alternatives (the paper: 1 of 100) and the
agreement of judge and person on them.

An unreadable primitive (scored 0 without a judge) and a missing score are not the judge's verdicts
and are never sampled.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from ..report.stats import agreement
from ..schemas.prim import PrimPrimitive
from ..schemas.sheets import BlindSheet, SheetError
from ..store import PrimScore
from .probe import labelled
from .scoring import primitive_acc

COLUMNS = ("case", "problem", "reference_solution", "gold_primitive", "model_primitive", "label", "comment")
# per audit: its labels, the first one the person's "the primitive is right" (the judge's own audit:
# correct; the alternative-route audit: a valid route the gold misses)
LABELS = {"judge": ("correct", "incorrect"), "routes": ("alternative", "none")}


class _Case(BaseModel):
    judge_correct: bool


class _Key(BaseModel):
    """What `read_sheet` reads of the key file."""

    cases: dict[str, _Case]
    audit: str = "judge"  # or "routes" (a key from before audits were named: the judge's own)


def judged(scores: Sequence[PrimScore]) -> list[PrimScore]:
    """The scores that are the judge's verdicts: scored, not for an unreadable primitive."""
    return [s for s in scores if s.status == "scored" and s.reason != "unreadable"]


def draw(scores: Sequence[PrimScore], n: int, seed: int, tau: float, *, routes: bool = False) -> list[PrimScore]:
    """A seeded sample of ``n``: half of them judged correct, half incorrect, as many as there are; with
    ``routes``, of those judged incorrect alone."""
    ordered = sorted(judged(scores), key=lambda s: (s.pid, s.target, s.k))
    rng = random.Random(seed)
    right = [s for s in ordered if primitive_acc(s.score or 0.0, tau)]
    wrong = [s for s in ordered if not primitive_acc(s.score or 0.0, tau)]
    take_right = 0 if routes else min(len(right), max(n // 2, n - len(wrong)))
    sample = rng.sample(right, take_right) + rng.sample(wrong, min(len(wrong), n - take_right))
    rng.shuffle(sample)
    return sample


def write_sheet(sheet: Path, sample: Sequence[PrimScore], *, problems: Mapping[str, str],
                solutions: Mapping[str, str], golds: Mapping[str, PrimPrimitive],
                written: Mapping[str, Mapping[str, str]], meta: dict, tau: float, routes: bool = False) -> int:
    """The blind sheet and its key (``written``: each scored rollout's primitive, by its call key); returns
    the number of cases."""
    rows, cases = [], {}
    for i, s in enumerate(sample, 1):
        case = f"case-{i:03d}"
        rows.append([case, problems[s.pid], solutions.get(s.pid, ""), golds[s.pid].labelled(),
                     labelled(written[s.rollout_call]), "", ""])
        cases[case] = {"pid": s.pid, "target": s.target, "k": s.k, "rollout_call": s.rollout_call, "score": s.score,
                       "judge_correct": primitive_acc(s.score or 0.0, tau)}
    BlindSheet(sheet, "case", "label").write(COLUMNS, rows, {**meta, "tau": tau, "cases": cases,
                                                             "audit": "routes" if routes else "judge"})
    return len(cases)


def _reader(audit: str) -> Callable[[str], bool]:
    """A person's label in ``audit``'s words -> whether the primitive is right."""
    labels = LABELS[audit]

    def read(text: str) -> bool:
        label = text.lower()
        if label not in labels:
            raise ValueError(f"label '{label}' is not one of {', '.join(labels)} (or blank)")
        return label == labels[0]
    return read


def read_sheet(sheet: Path) -> dict:
    """The filled-in sheet against its key: labelled cases, agreement, kappa, the disagreements; for the
    alternative-route audit, the alternatives found and their share of the labelled cases too."""
    blind = BlindSheet(sheet, "case", "label")
    meta = blind.read_key(_Key)
    audit = meta.get("audit", "judge")
    if audit not in LABELS:
        raise SheetError(f"{blind.key}: not this audit's key file (audit: '{audit}' is not one of {', '.join(LABELS)})")
    person = {case: right for case, (right, _) in blind.labels(meta["cases"], _reader(audit), every=False).items()}
    judge = {case: meta["cases"][case]["judge_correct"] for case in person}
    cases = sorted(person)
    stats = agreement([judge[c] for c in cases], [person[c] for c in cases]) if cases else None
    out = {"audit": audit, "judge": meta.get("judge"), "student": meta.get("student"), "tau": meta.get("tau"),
           "cases": len(meta["cases"]), "labelled": len(cases),
           "agreement": None if stats is None else stats["raw"], "kappa": None if stats is None else stats["kappa"],
           "disagreements": [c for c in cases if judge[c] != person[c]]}
    if audit == "routes":
        found = sum(person.values())
        out |= {"alternatives": found, "alternative_share": found / len(cases) if cases else None}
    return out
