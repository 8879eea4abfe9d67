"""The raw-output retest graded by hand (paper Appendix S.1, Table 43).

Every attempt of the chosen families at one setting (typically a `probe --pids ... --no-system-prompt
--temperature 0.7` run) goes to a sheet a person grades: the attempt's family, condition, problem,
reference answer and raw response, and an empty ``correct`` (yes or no) and ``comment``; the
verifier's verdicts stay in a key file beside the sheet. Read back, the person's verdicts are written
to a file of their own (SHEET.verdicts.jsonl), never over the verifier's, and shown next to them per
family and condition.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from .._lazy import lazy_module
from ..ladder.contract import Domain
from ..report.markdown import table
from ..schemas.conditions import LADDER
from ..schemas.models import Family, Rollout
from ..schemas.sheets import BlindSheet

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..report import plots as _plots
else:  # matplotlib: loaded when the figure is drawn
    _plots = lazy_module("oracleladder.report.plots")

RESPONSE_CHARS = 30_000  # a spreadsheet cell holds 32,767 characters: the end of a longer response
COLUMNS = ("attempt", "family", "condition", "problem", "reference_answer", "response", "correct", "comment")
VERDICTS = {"yes": True, "no": False}


class _Attempt(BaseModel):
    pid: str
    target: str
    k: int
    call_key: str
    cascade: str


class _Key(BaseModel):
    """What `read_sheet` reads of the key file."""

    attempts: dict[str, _Attempt]


def verdicts_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".verdicts.jsonl")


def _condition(target: str) -> str:
    return LADDER.label(target)


def _blind(sheet: Path) -> BlindSheet:
    return BlindSheet(sheet, "attempt", "correct")


def _verdict(text: str) -> bool:
    said = text.lower()
    if said not in VERDICTS:
        raise ValueError(f"correct '{said}' is not yes or no")
    return VERDICTS[said]


def write_sheet(sheet: Path, domain: Domain, families: dict[str, Family], rollouts: Sequence[Rollout], *,
                seed: int, meta: dict) -> int:
    """The sheet of every attempt (in a seeded order, numbered) and its key; returns the attempts."""
    ordered = sorted(rollouts, key=lambda r: (r.pid, r.target, r.k))
    shuffled = random.Random(seed).sample(ordered, len(ordered))
    rows, attempts = [], {}
    for i, r in enumerate(shuffled, 1):
        attempt, family = f"attempt-{i:03d}", families[r.pid]
        rows.append([attempt, r.pid, _condition(r.target), family.parent_prompt if not r.target.startswith("m")
                     else family.milestones[int(r.target[1:])].prompt, domain.target_gold(family, r.target),
                     r.response[-RESPONSE_CHARS:], "", ""])
        attempts[attempt] = {"pid": r.pid, "target": r.target, "k": r.k, "call_key": r.call_key,
                             "cascade": r.verdict.label.value if r.verdict.graded else "ungraded",
                             "reason": r.verdict.reason, "extracted": r.verdict.extracted}
    _blind(sheet).write(COLUMNS, rows, {**meta, "seed": seed, "attempts": attempts})
    return len(rows)


def read_sheet(sheet: Path) -> dict:
    """The graded sheet -> the person's verdicts (written to SHEET.verdicts.jsonl) and, per family and
    condition, the attempts the person and the verifier each count correct; a SheetError naming file
    and row for an attempt not in the key, a verdict that is not yes or no, and an attempt without a row."""
    blind = _blind(sheet)
    meta = blind.read_key(_Key)
    attempts = meta["attempts"]
    hand = {a: (correct, row.get("comment") or "") for a, (correct, row) in
            blind.labels(attempts, _verdict, every=True).items()}
    with verdicts_path(sheet).open("w", encoding="utf-8") as out:
        for attempt, a in sorted(attempts.items(), key=lambda kv: (kv[1]["pid"], kv[1]["target"], kv[1]["k"])):
            correct, comment = hand[attempt]
            out.write(json.dumps({"student": meta.get("student"), **{k: a[k] for k in ("pid", "target", "k", "call_key")},
                                  "hand": "ACCEPT" if correct else "NOT_ACCEPT", "cascade": a["cascade"],
                                  "comment": comment}) + "\n")
    cells: dict[tuple[str, str], Counter[str]] = {}
    for attempt, a in attempts.items():
        c = cells.setdefault((a["pid"], a["target"]), Counter())
        c["attempts"] += 1
        c["hand"] += hand[attempt][0]
        c["cascade"] += a["cascade"] == "ACCEPT"
        c["disagree"] += hand[attempt][0] != (a["cascade"] == "ACCEPT")
    families = [{"pid": pid, "condition": _condition(target), **counts}
                for (pid, target), counts in sorted(cells.items())]
    return {"student": meta.get("student"), "settings": meta.get("settings"), "families": families,
            "verdicts": str(verdicts_path(sheet))}


def markdown(result: dict) -> list[str]:
    """Table 43's layout: per family and condition, the attempts graded correct by hand and by the verifier."""
    rows = [[f["pid"], f["condition"], f["attempts"], f["hand"], f["cascade"], f["disagree"]] for f in result["families"]]
    solved = sum(f["hand"] > 0 for f in result["families"])
    return [f"## Raw-output retest graded by hand: {result['student']} ({result['settings']})", "",
            *table(["Family", "Condition", "Attempts", "Correct by hand", "Accepted by the verifier", "Disagree"], rows),
            "", f"Correct by hand in at least one attempt: {solved} of {len(rows)}. The hand verdicts are in "
            f"{result['verdicts']}, apart from the verifier's.", ""]


def figure(results: Sequence[dict]) -> Figure:
    """The explainer's Figure 8 of graded sheets (`read_sheet`'s results): per family and condition, one
    bar per sheet, the attempts correct by hand."""
    return _plots.retest_figure(results)[0]
