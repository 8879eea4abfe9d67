"""Families in released-format files: read, and checked by every validator without a store."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..schemas import Family
from ..schemas.jsonl import OnDuplicate, read_unique
from ..validators import check_family, family_leak_level, summarize as summarize_checks


def load_families(path: str | os.PathLike[str], on_duplicate: OnDuplicate = "error") -> list[Family]:
    """Families in the released record format; one per (pid, granularity): what the store keeps apart."""
    return read_unique(path, Family, on_duplicate, key=lambda f: (f.pid, f.provenance.granularity))


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
    loaded = load_families(path, on_duplicate)
    reports = [check_family(f, use_corrections=use_corrections) for f in loaded]
    return CheckResult(loaded, reports, summarize_checks(reports, loaded, use_corrections=use_corrections),
                       use_corrections)
