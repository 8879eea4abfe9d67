"""Per-family results out of a store and into one, in the release's panel records.

The release's oracle panel (``data/oracle_panel_16k/<model>.jsonl``) has one record per model,
condition and family: ``{"model", "condition", "pid", "n_correct", "k"}``. Its Stage 0 panel
(``data/stage0_panel_16k/``) holds one cell per model, family and milestone; the release README does
not spell its fields, so the toolkit writes and reads the same record with ``"milestone"`` (the
milestone's 0-based index in the family) in place of ``"condition"``.

A record the toolkit writes where some of its answers were cut off by the token budget or had nothing to
grade says so in two fields the release's records do not have: ``cut_off`` (how many of the k) and
``unreadable`` (how many, by why: `report.tables.WHY`); export and import warn of them in the words of every
surface (`warnings`).

An imported panel is filed under a run of its own (kind ``panel-import``, its file, model, stated
settings and the answers its records say were cut off, by condition, in the run's config): a report shows
it beside probed students as "imported panel", with no rollouts, and never pools it with a probe of the
same name."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, model_validator

from ..ladder.outcomes import FamilyResults
from ..report.tables.truncation import WHY, PanelTruncation, Truncation
from ..schemas.conditions import LADDER
from ..schemas.jsonl import InputError, read_jsonl, write_jsonl
from ..schemas.models import Family
from ..store import PanelCell, Store
from ..store.rows import MAX_INTEGER
from .selection import PANEL_RUN

ORACLE_PANEL = "oracle_panel"  # the folders of an export, as the release names them (less the budget)
STAGE0_PANEL = "stage0_panel"
STAGE0 = "Stage 0"  # the milestones' records together, in a warning


class PanelRecord(BaseModel):
    """One record of a panel file: a condition's count (the oracle panel) or a milestone's (Stage 0)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    pid: str
    condition: str | None = None
    milestone: int | None = None
    n_correct: int
    k: int
    cut_off: int | None = None  # of the k answers, those the token budget ended (the toolkit's records)
    unreadable: dict[str, int] | None = None  # of the k answers, those with nothing to grade, by why (WHY)

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
        if self.unreadable is not None and not set(self.unreadable) <= set(WHY):
            raise ValueError(f"unreadable counts answers by why: {', '.join(WHY)}, not "
                             f"{', '.join(sorted(set(self.unreadable) - set(WHY)))}")
        counts = [self.cut_off or 0, *(self.unreadable or {}).values()]
        if not all(0 <= n <= self.k for n in counts) or sum((self.unreadable or {}).values()) > self.k:
            raise ValueError(f"cut_off {self.cut_off} and unreadable {self.unreadable} are no counts of k {self.k}")
        return self

    @property
    def truncation(self) -> Truncation:
        """Its answers cut off and unreadable (none where the record does not say: the release's)."""
        return Truncation(answers=self.k, cut_off=self.cut_off or 0,
                          unreadable={w: (self.unreadable or {}).get(w, 0) for w in WHY})

    @property
    def target(self) -> str:
        return self.condition if self.condition is not None else f"m{self.milestone}"


def _cut(t: Truncation | None) -> dict:
    """A record's cut_off and unreadable fields: none where no answer was cut off or unreadable (the
    release's record, field for field)."""
    if t is None or not (t.cut_off or any(t.unreadable.values())):
        return {}
    return {"cut_off": t.cut_off, "unreadable": {w: n for w, n in t.unreadable.items() if n}}


def panel_records(model: str, results: Sequence[FamilyResults],
                  cut: Mapping[tuple[str, str], Truncation] | None = None) -> tuple[list[dict], list[dict]]:
    """A student's results as the release's oracle panel records and Stage 0 records; ``cut``, by pid and
    condition or milestone (m<i>), its answers cut off and unreadable."""
    cut = cut or {}
    oracle = [{"model": model, "condition": c, "pid": f.pid, "n_correct": sum(r), "k": len(r), **_cut(cut.get((f.pid, c)))}
              for f in results for c, r in f.ladder.items() if r]
    stage0 = [{"model": model, "pid": f.pid, "milestone": int(m[1:]), "n_correct": sum(r), "k": len(r),
               **_cut(cut.get((f.pid, m)))} for f in results for m, r in f.stage0.items() if r]
    return oracle, stage0


def truncations(records: Iterable[PanelRecord]) -> dict[str, Truncation]:
    """The answers of a model's records cut off and unreadable, by condition (Stage 0's milestones together)."""
    by: dict[str, list[Truncation]] = {}
    for r in records:
        by.setdefault(r.condition or STAGE0, []).append(r.truncation)
    return {target: Truncation.summed(parts) for target, parts in by.items()}


def warnings(model: str, records: Iterable[PanelRecord], budgets: Sequence[int]) -> list[str]:
    """One line per condition of a model's records whose answers were cut off or unreadable as
    `Truncation.warns` says, in the words of every surface."""
    return PanelTruncation(max_tokens=list(budgets), by_condition=truncations(records)).warnings(model)


def stored_truncation(configs: Iterable[Mapping]) -> PanelTruncation:
    """An imported panel's answers cut off and unreadable, read from the configs of its import runs (where
    `import_panels` keeps what its records said), by condition over every run, at the runs' --max-tokens."""
    configs = list(configs)
    by: dict[str, list[Truncation]] = {}
    for c in configs:
        for target, t in (c.get("cut_off") or {}).items():
            by.setdefault(target, []).append(Truncation.model_validate(t))
    return PanelTruncation(max_tokens=sorted({c["max_tokens"] for c in configs if c.get("max_tokens")}),
                           by_condition={target: Truncation.summed(parts) for target, parts in by.items()})


class Written(NamedTuple):
    """What `write_panels` wrote: both files, the number of records, and the warnings of their answers cut
    off or unreadable (`warnings`)."""

    oracle: Path
    stage0: Path
    records: int
    warnings: list[str]


class Imported(NamedTuple):
    """What `import_panels` read: the records per student, how many were left out (on families the set does
    not have), and per student the warnings its records' answers cut off or unreadable call for."""

    counts: dict[str, int]
    left_out: int
    warnings: dict[str, list[str]]


def file_name(model: str) -> str:
    """A model's panel file name (a provider/model string's slash is no folder)."""
    return model.replace("/", "_").replace(os.sep, "_") + ".jsonl"


def write_panels(out: str | os.PathLike[str], model: str, results: Sequence[FamilyResults],
                 cut: Mapping[tuple[str, str], Truncation] | None = None, budgets: Sequence[int] = ()) -> Written:
    """OUT/oracle_panel/<model>.jsonl and OUT/stage0_panel/<model>.jsonl (``cut``: as `panel_records`; ``budgets``:
    the --max-tokens the answers were made at, for the warnings)."""
    oracle, stage0 = panel_records(model, results, cut)
    paths = Path(out) / ORACLE_PANEL / file_name(model), Path(out) / STAGE0_PANEL / file_name(model)
    for path, records in zip(paths, (oracle, stage0)):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, records)
    said = warnings(model, [PanelRecord.model_validate(r) for r in oracle + stage0], budgets)
    return Written(paths[0], paths[1], len(oracle) + len(stage0), said)


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
                        settings: dict) -> Imported:
    """The records of panel files on ``families`` into ``store``, each model under an import run of its
    own whose config states ``settings`` (max_tokens, temperature, grader: what the files were made at,
    None if unknown); ``student`` renames every model of the files. Returns the records imported per
    student, the number left out (on families the set does not have) and the warnings of answers cut
    off or unreadable (at ``settings["max_tokens"]``); refused where none is on the set, or where two records of one model, family and target give different counts (a record
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
    counts, said = {}, {}
    budgets = [settings["max_tokens"]] if settings.get("max_tokens") else []
    for model, records in by_model.items():
        said[model] = warnings(model, records, budgets)
        cut = {target: t.model_dump() for target, t in truncations(records).items()
               if t.cut_off or any(t.unreadable.values())}
        run_id = await store.start_run(PANEL_RUN, {"model": model, "files": [str(p) for p in paths], **settings,
                                                   **({"cut_off": cut} if cut else {})})
        await store.put_panel_cells(PanelCell(student=model, source=rollout_source, pid=r.pid, target=r.target,
                                              n_correct=r.n_correct, k=r.k, run_id=run_id) for r in records)
        await store.finish_run(run_id, "done")
        counts[model] = len(records)
    return Imported(counts, left_out, said)
