"""Milestone solve rate by gold answer length (the paper's length analysis, Appendix N): are long gold
answers, which state a result with its justification, harder to match than short ones?

Each tested milestone with a Stage 0 result falls in a bin by its gold answer's length in characters
(the answer as stored, spaces at its ends aside); it is solved when at least tau of its K attempts alone
are accepted. As the paper pools, a family that has a milestone left out by the leak rule is left out
whole (and counted), so that the leak rule's choice of milestones does not tilt the bins."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from .._lazy import lazy_module
from ..ladder.outcomes import FamilyResults, solved
from ..report.markdown import pct, table
from ..schemas.models import Family

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..report import plots as _plots
else:  # matplotlib: loaded when the figure is drawn
    _plots = lazy_module("oracleladder.report.plots")

BINS = (20, 60)  # the paper's cut points: at most 20 characters, 21 to 60, above 60


class LengthBin(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str
    milestones: int
    solved: int
    rate: float | None  # None: no milestone in the bin


class SolveByLength(BaseModel):
    """One student's Stage 0 solves by gold length, at one setting."""

    model_config = ConfigDict(frozen=True)

    student: str
    setting: str
    tau: int
    bins: list[LengthBin]
    families: int  # the families pooled
    left_out: int  # families with a milestone the leak rule left out
    median_length: float | None


def bin_labels(cuts: Sequence[int]) -> list[str]:
    """"<= 20", "21-60", "> 60" for cuts (20, 60)."""
    lows = [1, *(c + 1 for c in cuts)]
    return [f"<= {cuts[0]}", *(f"{lo}-{hi}" for lo, hi in zip(lows[1:], cuts[1:])), f"> {cuts[-1]}"]


def parse_bins(text: str) -> tuple[int, ...]:
    """A comma list of increasing cut points ("20,60"); a ValueError saying so otherwise."""
    try:
        cuts = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"'{text}' is no comma list of whole numbers (e.g. 20,60)") from None
    if not cuts or cuts[0] < 1 or any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise ValueError(f"'{text}': the cut points rise, from at least 1 (e.g. 20,60)")
    return cuts


def solve_by_length(student: str, setting: str, families: Sequence[Family], results: Sequence[FamilyResults], *,
                    tau: int = 1, cuts: Sequence[int] = BINS, use_corrections: bool = False) -> SolveByLength:
    by_pid = {f.pid: f for f in families}
    counts = [[0, 0] for _ in range(len(cuts) + 1)]
    lengths: list[int] = []
    pooled = left_out = 0
    for r in results:
        family = by_pid[r.pid]
        if family.leaking:
            left_out += 1
            continue
        tried = [(m, r.stage0[f"m{i}"]) for i, m in family.tested(use_corrections) if r.stage0.get(f"m{i}")]
        pooled += bool(tried)
        for m, rolls in tried:
            n = len(m.answer.strip())
            lengths.append(n)
            cell = counts[sum(n > c for c in cuts)]
            cell[0] += 1
            cell[1] += solved(rolls, tau)
    bins = [LengthBin(label=label, milestones=m, solved=s, rate=s / m if m else None)
            for label, (m, s) in zip(bin_labels(cuts), counts)]
    return SolveByLength(student=student, setting=setting, tau=tau, bins=bins, families=pooled, left_out=left_out,
                         median_length=statistics.median(lengths) if lengths else None)


def markdown(results: Sequence[SolveByLength]) -> list[str]:
    """The table: a row per length bin, per student the milestones solved alone of those tested."""
    labels = [b.label for b in results[0].bins]
    rows = [[f"{label} characters", *(f"{r.bins[i].solved} of {r.bins[i].milestones}"
                                       f" ({pct(r.bins[i].solved, r.bins[i].milestones) if r.bins[i].milestones else '—'})"
                                       for r in results)] for i, label in enumerate(labels)]
    return ["## Milestone solve rate by gold answer length", "",
            *table(["Gold length", *(r.student for r in results)], rows), "",
            *(f"- {r.student} ({r.setting}, tau = {r.tau}): {r.families} families pooled, {r.left_out} left out "
              f"(a milestone left out by the leak rule); median gold length "
              f"{'—' if r.median_length is None else f'{r.median_length:g}'} characters" for r in results), ""]


def figure(results: Sequence[SolveByLength]) -> Figure:
    return _plots.length_figure([(r.student, [(b.label, b.solved, b.milestones) for b in r.bins]) for r in results])[0]
