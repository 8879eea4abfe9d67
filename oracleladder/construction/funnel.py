"""The construction funnel (paper, Appendix B: 2,000 -> 1,024 -> 731 -> 354), read from the store.

candidates -> valid reference answer -> compiled -> passed the screen -> structural filter -> final set;
for a raw pool screened before compile (`ladder screen POOL`): candidates -> valid reference answer ->
passed the raw screen -> compiled -> structural filter -> final set.
Every candidate has one fate, the stage where it left and why (the compile attempt's or the screen's
stored reason), so a dropped problem can always be listed with its reason.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ..schemas import Family
from ..schemas.jsonl import InputError
from ..store import CompileAttempt, ScreenVerdict
from ..validators.reference import CHECK as REFERENCE_CHECK
from .screen import INCOMPLETE, KEPT, MILESTONE_UNSOLVED, SOLVED_DIRECTLY, STRUCTURAL, structural_milestones

# the stage a problem was dropped at, in funnel order (a raw pool's screen comes before compile)
REFERENCE, RAW_SCREEN, COMPILE, SCREEN, FILTER = ("reference answer", "raw screen", "compile", "screen",
                                                  "structural filter")


class Fate(BaseModel):
    pid: str
    stage: str | None  # None: in the final set
    cause: str  # the check or verdict that dropped it (kept: "kept")
    reason: str


class Funnel(BaseModel):
    set_name: str
    source: str
    candidates: int
    valid_reference: int
    passed_raw_screen: int | None  # None: no raw screen (the set's families were screened once compiled)
    raw_screen_failures: dict[str, int]  # solved_directly, incomplete (unscreened)
    compiled: int
    compile_failures: dict[str, int]  # by the failing check of the last attempt
    passed_screen: int
    screen_failures: dict[str, int]  # solved_directly, milestone_unsolved, incomplete, not_screened
    final: int
    structural_failures: int
    fates: list[Fate]

    def dropped(self) -> list[Fate]:
        return [f for f in self.fates if f.stage is not None]


def fate(pid: str, attempts: Sequence[CompileAttempt], family: Family | None, verdict: ScreenVerdict | None) -> Fate:
    if family is None:
        errors = attempts[-1].errors if attempts else []
        first = errors[0] if errors else {"check": "compile", "reason": "no compile attempt stored"}
        stage: str | None = REFERENCE if first.get("check") == REFERENCE_CHECK else COMPILE
        return Fate(pid=pid, stage=stage, cause=first.get("check", "compile"), reason=first.get("reason", ""))
    if verdict is None:
        return Fate(pid=pid, stage=SCREEN, cause="not_screened", reason="compiled, but not screened for this set")
    stage = {KEPT: None, STRUCTURAL: FILTER, REFERENCE_CHECK: REFERENCE}.get(verdict.verdict, SCREEN)
    return Fate(pid=pid, stage=stage, cause=verdict.verdict, reason=verdict.reason)


def after_raw_screen(verdict: ScreenVerdict, attempts: Sequence[CompileAttempt] | None,
                     family: Family | None) -> Fate:
    """The fate of a raw pool's problem (`ladder screen POOL`): dropped by the screen, else by its compile
    (``attempts`` None: no teacher named, so not compiled here), else by the structural filter (a math
    family; a code packet has no such filter)."""
    pid = verdict.pid
    if verdict.verdict != KEPT:
        stage = REFERENCE if verdict.verdict == REFERENCE_CHECK else RAW_SCREEN
        return Fate(pid=pid, stage=stage, cause=verdict.verdict, reason=verdict.reason)
    if attempts is None:
        return Fate(pid=pid, stage=COMPILE, cause="not_compiled",
                    reason=f"passed the raw screen; `ladder compile POOL --set {verdict.set_name}` compiles it "
                           "(then name its teacher here with --source)")
    if not any(a.passed for a in attempts):
        return fate(pid, attempts, None, None)
    if family is not None and len(structural_milestones(family)) < 2:
        return Fate(pid=pid, stage=FILTER, cause=STRUCTURAL,
                    reason=f"{len(structural_milestones(family))} tested non-INTEGRATE milestone(s) after the leak "
                           "rule; the set needs at least 2")
    return Fate(pid=pid, stage=None, cause=KEPT, reason=verdict.reason)


def funnel(set_name: str, source: str, fates: Sequence[Fate], *, raw: bool = False) -> Funnel:
    at = Counter(f.stage for f in fates)
    n = len(fates)
    return Funnel(
        set_name=set_name, source=source, candidates=n,
        valid_reference=n - at[REFERENCE],
        passed_raw_screen=n - at[REFERENCE] - at[RAW_SCREEN] if raw else None,
        raw_screen_failures=dict(Counter(f.cause for f in fates if f.stage == RAW_SCREEN)),
        compiled=n - at[REFERENCE] - at[RAW_SCREEN] - at[COMPILE],
        compile_failures=dict(Counter(f.cause for f in fates if f.stage == COMPILE)),
        passed_screen=at[FILTER] + at[None],
        screen_failures=dict(Counter(f.cause for f in fates if f.stage == SCREEN)),
        final=at[None], structural_failures=at[FILTER], fates=list(fates),
    )


# the screen's causes in the order the table lists them
SCREEN_CAUSES = (SOLVED_DIRECTLY, MILESTONE_UNSOLVED, INCOMPLETE, "not_screened")


def final_set(families: Sequence[Family], verdicts: Sequence[ScreenVerdict]) -> list[Family]:
    """The kept families, each tested milestone's pre_train_phat set to the anchor's Stage 0 solve
    rate (correct attempts of K, as the release defines it)."""
    kept = {v.pid: v for v in verdicts if v.verdict == KEPT}
    out = []
    for family in families:
        if family.pid in kept:
            rates = kept[family.pid].stage0
            milestones = [m.model_copy(update={"pre_train_phat": rates[f"m{i}"]}) if f"m{i}" in rates else m
                          for i, m in enumerate(family.milestones)]
            out.append(family.model_copy(update={"milestones": milestones}))
    return out


def into_report(folder: Path, record: dict) -> None:
    """``record`` under "funnel" in folder/report.json, the file's other keys kept (made if missing);
    an InputError when the file is not a JSON object."""
    path, hint = folder / "report.json", "--out takes the folder of a report, or a new one"
    try:
        report = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError as exc:  # not JSON, or not UTF-8
        raise InputError(f"{path}: not a report ({exc}); {hint}") from None
    if not isinstance(report, dict):
        raise InputError(f"{path}: not a report (a JSON {type(report).__name__}, not an object); {hint}")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report | {"funnel": record}, indent=2, ensure_ascii=False), encoding="utf-8")
