"""Families in released-format files: read, and checked by every validator (``check`` a file,
``check_families`` families read from anywhere, a store's set among them)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..schemas import Family
from ..schemas.jsonl import OnDuplicate, read_unique
from ..validators import check_family, family_leak_level, shown_leak, summarize as summarize_checks


def _unleaked(raw: dict) -> Family:
    """A released record to import; refused when a text it shows students states a gold (`shown_leak`)."""
    family = Family.model_validate(raw)
    leak = shown_leak(family)
    if leak is not None:
        where = "primitive" if leak.milestone is None else f"milestone {leak.milestone + 1} (m{leak.milestone})"
        raise ValueError(f"pid {family.pid}: {where} [{leak.check}] {leak.reason}; nothing imported: fix or drop "
                         "the family (`ladder check` runs every check)")
    return family


def load_families(path: str | os.PathLike[str], on_duplicate: OnDuplicate = "error", *,
                  refuse_leaks: bool = False) -> list[Family]:
    """Families in the released record format; one per (pid, granularity): what the store keeps apart.
    ``refuse_leaks``: a family with a text shown to students that states a gold (a milestone's
    description or prompt, its primitive: `validators.shown_leak`) is an InputError at its line."""
    return read_unique(path, _unleaked if refuse_leaks else Family, on_duplicate,
                       key=lambda f: (f.pid, f.provenance.granularity))


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
