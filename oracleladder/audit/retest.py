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
from ..schemas.sheets import SheetError, read_key, read_numbered, write_rows

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


def key_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".key.json")


def verdicts_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".verdicts.jsonl")


def _condition(target: str) -> str:
    return LADDER.label(target)


def write_sheet(sheet: Path, domain: Domain, families: dict[str, Family], rollouts: Sequence[Rollout], *,
                seed: int, meta: dict) -> int:
    """The sheet of every attempt (in a seeded order, numbered) and its key; returns the attempts."""
    if sheet.exists() or key_path(sheet).exists():  # it may hold a person's verdicts
        raise FileExistsError(f"{sheet} exists; a sheet is never overwritten: give another --sheet")
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
    write_rows(sheet, COLUMNS, rows)  # a cell a spreadsheet would evaluate is written as text
    key_path(sheet).write_text(json.dumps({**meta, "seed": seed, "attempts": attempts}, indent=2))
    return len(rows)


def read_sheet(sheet: Path) -> dict:
    """The graded sheet -> the person's verdicts (written to SHEET.verdicts.jsonl) and, per family and
    condition, the attempts the person and the verifier each count correct; a SheetError naming file
    and row for an attempt not in the key, a verdict that is not yes or no, and an attempt without a row."""
    key = key_path(sheet)
    meta = read_key(key, _Key)
    attempts, hand = meta["attempts"], {}
    for n, row in read_numbered(sheet, ("attempt", "correct")):
        attempt, said = (row.get("attempt") or "").strip(), (row.get("correct") or "").strip().lower()
        if attempt not in attempts:
            raise SheetError(f"{sheet}:{n}: attempt '{attempt}' is not in {key.name}")
        if said not in VERDICTS:
            raise SheetError(f"{sheet}:{n}: correct '{said}' is not yes or no")
        hand[attempt] = (VERDICTS[said], row.get("comment") or "")
    missing = [a for a in attempts if a not in hand]
    if missing:
        raise SheetError(f"{sheet}: attempt '{missing[0]}' has no row")
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
