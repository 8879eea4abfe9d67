"""Per-family results out of a store and into one, in the release's panel records.

The release's oracle panel (``data/oracle_panel_16k/<model>.jsonl``) has one record per model,
condition and family: ``{"model", "condition", "pid", "n_correct", "k"}``. Its Stage 0 panel
(``data/stage0_panel_16k/``) holds one cell per model, family and milestone; the release README does
not spell its fields, so the toolkit writes and reads the same record with ``"milestone"`` (the
milestone's 0-based index in the family) in place of ``"condition"``.

An imported panel is filed under a run of its own (kind ``panel-import``, its file, model and stated
settings in the run's config): a report shows it beside probed students as "imported panel", with no
rollouts, and never pools it with a probe of the same name."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from ..ladder.outcomes import FamilyResults
from ..schemas.conditions import LADDER
from ..schemas.jsonl import InputError, read_jsonl, write_jsonl
from ..schemas.models import Family
from ..store import PanelCell, Store
from ..store.rows import MAX_INTEGER
from .selection import PANEL_RUN

ORACLE_PANEL = "oracle_panel"  # the folders of an export, as the release names them (less the budget)
STAGE0_PANEL = "stage0_panel"


class PanelRecord(BaseModel):
    """One record of a panel file: a condition's count (the oracle panel) or a milestone's (Stage 0)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    pid: str
    condition: str | None = None
    milestone: int | None = None
    n_correct: int
    k: int

    @model_validator(mode="after")
    def _one_target(self) -> PanelRecord:
        if (self.condition is None) == (self.milestone is None):
            raise ValueError("a panel record has a condition (oracle panel) or a milestone index (Stage 0), "
                             "one of them")
        if self.condition is not None and self.condition not in LADDER:
            raise ValueError(f"unknown condition '{self.condition}' (known: {', '.join(LADDER.default)})")
        if not 0 <= self.n_correct <= self.k or not 1 <= self.k <= MAX_INTEGER:
            raise ValueError(f"n_correct {self.n_correct} of k {self.k} is no count"
                             + (f" (k is at most {MAX_INTEGER:,})" if self.k > MAX_INTEGER else ""))
        return self

    @property
    def target(self) -> str:
        return self.condition if self.condition is not None else f"m{self.milestone}"


def panel_records(model: str, results: Sequence[FamilyResults]) -> tuple[list[dict], list[dict]]:
    """A student's results as the release's oracle panel records and Stage 0 records."""
    oracle = [{"model": model, "condition": c, "pid": f.pid, "n_correct": sum(r), "k": len(r)}
              for f in results for c, r in f.ladder.items() if r]
    stage0 = [{"model": model, "pid": f.pid, "milestone": int(m[1:]), "n_correct": sum(r), "k": len(r)}
              for f in results for m, r in f.stage0.items() if r]
    return oracle, stage0


def file_name(model: str) -> str:
    """A model's panel file name (a provider/model string's slash is no folder)."""
    return model.replace("/", "_").replace(os.sep, "_") + ".jsonl"


def write_panels(out: str | os.PathLike[str], model: str, results: Sequence[FamilyResults]) -> tuple[Path, Path, int]:
    """OUT/oracle_panel/<model>.jsonl and OUT/stage0_panel/<model>.jsonl; returns both paths and the
    number of records."""
    oracle, stage0 = panel_records(model, results)
    paths = Path(out) / ORACLE_PANEL / file_name(model), Path(out) / STAGE0_PANEL / file_name(model)
    for path, records in zip(paths, (oracle, stage0)):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, records)
    return paths[0], paths[1], len(oracle) + len(stage0)


def read_panel(path: str | os.PathLike[str], families: Sequence[Family]) -> tuple[list[PanelRecord], int]:
    """A panel file's records on the families of a set, and how many it has on other families (a
    release panel covers all 354; a set may hold some of them); refused (InputError) where a record
    names a milestone its family does not have."""
    by_pid = {f.pid: f for f in families}
    kept, other = [], 0
    for r in read_jsonl(path, PanelRecord):
        family = by_pid.get(r.pid)
        if family is None:
            other += 1
            continue
        if r.milestone is not None and not 0 <= r.milestone < len(family.milestones):
            raise InputError(f"{path}: pid '{r.pid}' has {len(family.milestones)} milestones, no milestone "
                             f"{r.milestone}")
        kept.append(r)
    return kept, other


async def import_panels(store: Store, paths: Sequence[str | os.PathLike[str]], families: Sequence[Family],
                        rollout_source: str, *, student: str | None = None,
                        settings: dict) -> tuple[dict[str, int], int]:
    """The records of panel files on ``families`` into ``store``, each model under an import run of its
    own whose config states ``settings`` (max_tokens, temperature, grader: what the files were made at,
    None if unknown); ``student`` renames every model of the files. Returns the records imported per
    student and the number left out (on families the set does not have); refused where none is on
    the set, or where two records of one model, family and target give different counts (a record
    repeated as it is counts once)."""
    by_model: dict[str, list[PanelRecord]] = {}
    seen: dict[tuple[str, str, str], tuple[str | os.PathLike[str], PanelRecord]] = {}
    left_out = 0
    for path in paths:
        kept, other = read_panel(path, families)
        left_out += other
        for r in kept:
            model = student or r.model
            first = seen.setdefault((model, r.pid, r.target), (path, r))
            if first[1] is r:
                by_model.setdefault(model, []).append(r)
            elif (first[1].n_correct, first[1].k) != (r.n_correct, r.k):  # a repeat that agrees is one record
                raise InputError(f"{path}: {model} on pid '{r.pid}' {r.target} is {r.n_correct} of {r.k} here and "
                                 f"{first[1].n_correct} of {first[1].k} in {first[0]}: keep one of them")
    if not by_model:
        raise InputError(f"{', '.join(map(str, paths))}: no panel record on a family of the roadmap set "
                         f"({left_out} on other families); import the set the panel was made on, or name it "
                         "with --source")
    counts = {}
    for model, records in by_model.items():
        run_id = await store.start_run(PANEL_RUN, {"model": model, "files": [str(p) for p in paths], **settings})
        await store.put_panel_cells(PanelCell(student=model, source=rollout_source, pid=r.pid, target=r.target,
                                              n_correct=r.n_correct, k=r.k, run_id=run_id) for r in records)
        await store.finish_run(run_id, "done")
        counts[model] = len(records)
    return counts, left_out
