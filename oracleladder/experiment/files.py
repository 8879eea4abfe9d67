"""Families in released-format files: read, and checked by every validator (``check`` a file,
``check_families`` families read from anywhere, a store's set among them)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..schemas import CheckResult as Check, Correction, Family
from ..schemas.jsonl import InputError, OnDuplicate, read_jsonl, read_unique
from ..validators import check_family, family_leak_level, shown_leaks, summarize as summarize_checks
from ..validators.leak import leaking_milestones


def load_families(path: str | os.PathLike[str], on_duplicate: OnDuplicate = "error") -> list[Family]:
    """Families in the released record format; one per (pid, granularity): what the store keeps apart."""
    return read_unique(path, Family, on_duplicate, key=lambda f: (f.pid, f.provenance.granularity))


def with_leaks_left_out(family: Family) -> list[Check]:
    """The leak rule on a family to import (the paper's: the milestones that leak are left out, the
    family is kept): ``leaking`` holds each tested milestone whose gold restates the reference answer
    (`leak.leaking_milestones`) or whose description or prompt states a final answer, so Stage 0, C2
    and C3 leave it out; a primitive that states a gold is dropped. Returns the shown texts' leaks
    (`validators.shown_leaks`), for the importer to list."""
    shown = shown_leaks(family)
    told = {c.milestone for c in shown if c.milestone is not None}
    family.leaking = sorted(set(leaking_milestones(family)) | told)
    if len(told) < len(shown):
        family.primitive = None
    return shown


_MILESTONE_GOLDS = re.compile(r"milestones\[(\d+(?:\s*,\s*\d+)*)\]\.answer")


def apply_corrections(families: list[Family], path: str | os.PathLike[str]) -> list[Correction]:
    """Merge the release's corrections (``path``, corrections.jsonl) into the families' own correction
    fields: a parent answer's into ``parent_answer_corrected`` (its evidence the ``correction_note``),
    wrong milestone golds into ``milestone_gold_invalid`` (their evidence the note where no parent
    answer is corrected). Returns the corrections, each applied; an InputError (nothing applied) for a
    correction of a pid not in ``families``, of a field no record holds, or whose original is not the
    record's."""
    corrections = list(read_jsonl(path, Correction))
    by_pid = {f.pid: f for f in families}
    unknown = list(dict.fromkeys(c.pid for c in corrections if c.pid not in by_pid))
    if unknown:
        raise InputError(f"{path}: {len(unknown)} correction(s) name a pid not among the families imported: "
                         f"{', '.join(unknown)}")
    for c in corrections:
        _check_original(by_pid[c.pid], c, path)
    # a parent answer's evidence is the note, as in the release's records: it goes first
    for c in sorted(corrections, key=lambda c: c.field != "parent_answer"):
        family = by_pid[c.pid]
        if c.field == "parent_answer":
            family.parent_answer_corrected, family.correction_note = str(c.corrected), c.evidence
        else:
            invalid = set(family.milestone_gold_invalid or []) | set(_milestone_indices(c))
            family.milestone_gold_invalid = sorted(invalid)
            family.correction_note = family.correction_note or c.evidence
    return corrections


def _milestone_indices(c: Correction) -> list[int]:
    match = _MILESTONE_GOLDS.fullmatch(c.field)
    return [int(i) for i in match.group(1).split(",")] if match else []


def _check_original(family: Family, c: Correction, path: str | os.PathLike[str]) -> None:
    """An InputError unless ``c`` corrects a field of ``family`` as the record has it."""
    where = f"{path}: the correction of {c.pid} {c.field}"
    if c.field == "parent_answer":
        if not isinstance(c.corrected, str) or c.original != family.parent_answer:
            raise InputError(f"{where} must turn the record's {family.parent_answer!r} into one answer, "
                             f"not {c.original!r} into {c.corrected!r}")
        return
    indices = _milestone_indices(c)
    if not indices:
        raise InputError(f"{where}: no record field is named so (parent_answer, or milestones[I,J].answer)")
    if c.corrected is not None:
        raise InputError(f"{where}: a record holds no corrected milestone gold, only the invalid ones "
                         "(corrected: null)")
    golds = [family.milestones[i].answer if i < len(family.milestones) else None for i in indices]
    if (c.original if isinstance(c.original, list) else [c.original]) != golds:
        raise InputError(f"{where}: the original golds {c.original!r} are not the record's {golds!r}")


@dataclass
class CheckResult:
    """Every deterministic validator on some families: one report per family, and the totals."""

    families: list[Family]
    reports: list
    totals: dict
    use_corrections: bool = False

    def leak_level(self, family: Family) -> str | None:
        return family_leak_level(family, use_corrections=self.use_corrections)


def check(path: str | os.PathLike[str], *, use_corrections: bool = False,
          on_duplicate: OnDuplicate = "error") -> CheckResult:
    """Run every deterministic validator on the families of a released-format file (no store)."""
    return check_families(load_families(path, on_duplicate), use_corrections=use_corrections)


def check_families(families: list[Family], *, use_corrections: bool = False) -> CheckResult:
    """Run every deterministic validator on ``families``."""
    reports = [check_family(f, use_corrections=use_corrections) for f in families]
    return CheckResult(families, reports, summarize_checks(reports, families, use_corrections=use_corrections),
                       use_corrections)
