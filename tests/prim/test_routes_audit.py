"""The alternative-route audit of PRIM's judge (issue 47, item 4; PRIM App. A.3: of 100 primitive-incorrect
cases, 1 held a valid route the single gold missed): a seeded sample of the primitives the judge scored
incorrect, on the blind sheet every audit writes (schemas.sheets.BlindSheet), labelled ``alternative`` or
``none`` by a person and read back with the alternatives' share and the agreement. Counted by hand on eight
constructed scores: five judged incorrect (Score 0.4 < tau 0.8), three correct (Score 1.0)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from oracleladder.prim import audit
from oracleladder.schemas.prim import PrimPrimitive
from oracleladder.schemas.sheets import SheetError, key_path
from oracleladder.store import PrimScore

SCORES = [PrimScore(student="openai/s", source="prim:release", pid=f"p{i}", target="prim_discovery", k=0,
                    judge="openai/j", status="scored", validity=1, score=0.4 if i < 5 else 1.0, rollout_call=f"c{i}")
          for i in range(8)]


def _sheet(tmp_path: Path, n: int) -> Path:
    sheet = tmp_path / "routes.csv"
    sample = audit.draw(SCORES, n, seed=0, tau=0.8, routes=True)
    audit.write_sheet(sheet, sample, problems={s.pid: f"problem {s.pid}" for s in SCORES}, solutions={},
                      golds={s.pid: PrimPrimitive(pid=s.pid, core_concept="gold", provenance="gold") for s in SCORES},
                      written={s.rollout_call: {"core_concept": "mine"} for s in SCORES}, meta={"judge": "openai/j"},
                      tau=0.8, routes=True)
    return sheet


def _label(sheet: Path, labels: list[str]) -> list[str]:
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row, label in zip(rows, labels):
        row["label"] = label
    with sheet.open("w", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    return [row["case"] for row in rows]


def test_the_routes_sample_holds_only_what_the_judge_scored_incorrect(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, n=8)  # more asked than there are: the five incorrect ones, no correct one
    key = json.loads(key_path(sheet).read_text())
    assert key["audit"] == "routes" and len(key["cases"]) == 5
    assert {c["rollout_call"] for c in key["cases"].values()} == {f"c{i}" for i in range(5)}
    assert not any(c["judge_correct"] for c in key["cases"].values())


def test_the_filled_sheet_reads_back_the_alternatives_share_and_agreement(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, n=4)
    cases = _label(sheet, ["Alternative", "none", "none", "none"])
    result = audit.read_sheet(sheet)
    # by hand: 1 alternative of 4 labelled; the judge (incorrect) and the person agree on the 3 "none";
    # kappa: p_o = 3/4, p_e = (4/4)(3/4) + 0 = 3/4, so (p_o - p_e) / (1 - p_e) = 0
    assert (result["audit"], result["labelled"], result["alternatives"], result["alternative_share"]) == (
        "routes", 4, 1, 0.25)
    assert (result["agreement"], result["kappa"], result["disagreements"]) == (0.75, 0.0, [cases[0]])


def test_a_label_of_the_other_audit_is_one_error_naming_the_row(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, n=4)
    _label(sheet, ["none", "correct"])
    with pytest.raises(SheetError, match=f"^{sheet}:3: label 'correct' is not one of alternative, none"):
        audit.read_sheet(sheet)
