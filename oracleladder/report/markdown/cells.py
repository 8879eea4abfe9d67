"""The helpers every Markdown table of the toolkit is written with: `table`, `pct`, `num`, `p_value`."""

from __future__ import annotations

from collections.abc import Sequence

from ..tables import NOT_RUN

NONE = "—"  # a cell with no value (a statistic of nothing)


# ---------------------------------------------------------------- helpers

def table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table: its header, the rule under it, one line per row (cells as str())."""
    return (["| " + " | ".join(str(c) for c in header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def pct(x: float | None, of: float | None = None, digits: int = 1) -> str:
    """``x`` as a percentage: a share, or with ``of`` a count of that many (100 * x / of, rounded once);
    NOT_RUN for None."""
    if x is None:
        return NOT_RUN
    return f"{(100 * x if of is None else 100 * x / of):.{digits}f}%"


def num(x: float | None, fmt: str = "{:.1f}") -> str:
    """A number by ``fmt``; NONE for None."""
    return NONE if x is None else fmt.format(x)


def p_value(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.1e}"
