"""Problem pools as people have them: JSONL, CSV or Parquet with the common sources' field names.

NuminaMath (problem, answer, solution, source), MATH (problem, solution with the answer boxed in it,
unique_id), AIME-style (id, problem, answer); `fields` maps other names (``{"problem": "question"}``).
A record whose answer is missing or empty still becomes a problem, with an empty answer: compile
skips it with its reason before any teacher call, so the funnel counts it. A file whose records have
no problem text, or neither an answer nor a solution field, is an input error (the field names are
wrong, not the problem).

Every cell is read as written: a CSV's columns are all text (no type inference, which would turn the
gold ``18446744073709551616`` into ``1.8446744073709552e+19`` and the pid ``007`` into ``7``), and a
cell of pid, problem, answer or solution that is not text (a JSON number, list or object, a Parquet
number or binary column) is an input error at its row and column, never its repr. No text means
"missing" unless the user names it (`null_values`, e.g. ``("NA", "null")``): ``NA`` may be an answer.
"""
from __future__ import annotations

import codecs
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow
import pyarrow.csv
import pyarrow.parquet

from ..schemas import MathProblem
from ..schemas.jsonl import InputError, OnDuplicate, read_unique, unique
from ..verify.extract import last_boxed

ID_FIELDS = ("pid", "id", "unique_id", "problem_id")
FORMATS = {".csv": "CSV", ".parquet": "Parquet", ".pq": "Parquet"}  # anything else is read as JSONL


def parse_fields(specs: list[str] | None) -> dict[str, str]:
    """`problem=question` pairs: our field name = the pool's column."""
    fields: dict[str, str] = {}
    for spec in specs or []:
        ours, sep, theirs = spec.partition("=")
        if not sep or ours.strip() not in ("pid", "problem", "answer", "solution") or not theirs.strip():
            raise InputError(f"--field {spec!r}: expected NAME=COLUMN with NAME one of pid, problem, answer, solution")
        fields[ours.strip()] = theirs.strip()
    return fields


def _not_text(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, (bytes, bytearray)):
        return "bytes (a binary column)"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


def _has(raw: dict, fields: dict[str, str], name: str) -> bool:
    return fields[name] in raw if name in fields else name in raw


def to_problem(raw: dict, fields: dict[str, str], null_values: Sequence[str] = ()) -> MathProblem:
    """One pool record as a MathProblem; raises KeyError/ValueError naming what is missing or not text."""
    def get(name: str, *aliases: str) -> str | None:
        for column in ([fields[name]] if name in fields else [name, *aliases]):
            if column in raw:
                value = raw[column]
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"column {column!r} holds {_not_text(value)}, not text; store it as a "
                                     "string, as it is written")
                text = None if value is None else value.strip()
                return None if text in null_values else text
        raise KeyError(name)

    try:
        problem = get("problem")
    except KeyError:
        raise ValueError(f"no problem field among {sorted(raw)}; name it with --field problem=COLUMN") from None
    if not problem:
        raise ValueError("the problem text is empty")
    has_answer, has_solution = _has(raw, fields, "answer"), _has(raw, fields, "solution")
    if not (has_answer or has_solution):
        raise ValueError(f"no answer or solution field among {sorted(raw)}; name one with --field answer=COLUMN")
    answer = get("answer") if has_answer else None
    solution = get("solution") if has_solution else None
    if not answer and solution:  # MATH: the answer is the solution's last \boxed{}
        answer = (last_boxed(solution) or "").strip()
    try:
        pid = get("pid", *ID_FIELDS[1:])
    except KeyError:
        pid = None
    # NuminaMath has no id: the problem text names it, the same on every rerun (the cache keys on it)
    pid = pid or "p" + hashlib.sha256(problem.encode()).hexdigest()[:16]
    return MathProblem(pid=pid, problem=problem, answer=answer or "", solution=solution or None,
                       choices=raw.get("choices"))


def _csv(path: Path, encoding: str | None) -> pyarrow.Table:
    """Every column as text: the header names them, then each is read as a string column."""
    read = pyarrow.csv.ReadOptions(encoding=encoding or "utf8")
    try:
        names = pyarrow.csv.open_csv(path, read_options=read).schema.names
        as_text = pyarrow.csv.ConvertOptions(column_types={n: pyarrow.string() for n in names},
                                             strings_can_be_null=False, quoted_strings_can_be_null=False)
        return pyarrow.csv.read_csv(path, read_options=read, convert_options=as_text)
    except pyarrow.ArrowInvalid as exc:
        if "UTF8" in str(exc) and encoding is None:
            raise InputError(f"{path}: not UTF-8 text; name the file's encoding with --encoding "
                             "(e.g. --encoding latin-1)") from None
        raise
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not {encoding} text ({exc.reason} at byte {exc.start}); "
                         "check --encoding") from None


def _rows(path: Path, fields: dict[str, str], null_values: Sequence[str],
          encoding: str | None) -> Iterator[tuple[int, MathProblem]]:
    """(row number counting the CSV header as row 1, problem); a bad row is an InputError at its row."""
    kind = FORMATS[path.suffix.lower()]
    try:
        table = _csv(path, encoding) if kind == "CSV" else pyarrow.parquet.read_table(path)
    except (pyarrow.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable {kind} file ({str(exc).splitlines()[0]})") from None
    first = 2 if kind == "CSV" else 1
    for row, raw in enumerate(table.to_pylist(), start=first):
        try:
            yield row, to_problem(raw, fields, null_values)
        except (KeyError, ValueError) as exc:
            raise InputError(f"{path}: row {row}: {exc}") from None


def read_pool(path: Path, fields: dict[str, str] | None = None, on_duplicate: OnDuplicate = "error", *,
              null_values: Sequence[str] = (), encoding: str | None = None) -> list[MathProblem]:
    """The problems of a pool file, one per pid (a repeated pid as `read_unique` says). A cell whose
    text is one of ``null_values`` is missing; ``encoding``: a CSV's, when it is not UTF-8 (JSONL is
    UTF-8, Parquet binary)."""
    fields = fields or {}
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise InputError(f"--encoding {encoding}: no such encoding") from None
        if FORMATS.get(path.suffix.lower()) != "CSV":
            raise InputError(f"{path}: --encoding is for a CSV pool (JSONL is UTF-8, Parquet has its own)")
    if path.suffix.lower() in FORMATS:
        return unique(_rows(path, fields, null_values, encoding), path, on_duplicate)
    return read_unique(path, lambda raw: to_problem(raw, fields, null_values), on_duplicate)
