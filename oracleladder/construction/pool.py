"""Problem pools as people have them: JSONL, CSV or Parquet with the common sources' field names.

NuminaMath (problem, answer, solution, source), MATH (problem, solution with the answer boxed in it,
unique_id), AIME-style (id, problem, answer); `fields` maps other names (``{"problem": "question"}``).
A record whose answer is missing or empty still becomes a problem, with an empty answer: compile
skips it with its reason before any teacher call, so the funnel counts it. A file whose records have
no problem text, or neither an answer nor a solution field, is an input error (the field names are
wrong, not the problem).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow.csv
import pyarrow.parquet

from ..verify.extract import last_boxed
from ..schemas import MathProblem
from ..schemas.jsonl import InputError, OnDuplicate, read_unique, unique

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


def _text(value: object) -> str | None:
    return None if value is None else str(value).strip()


def _has(raw: dict, fields: dict[str, str], name: str) -> bool:
    return fields[name] in raw if name in fields else name in raw


def to_problem(raw: dict, fields: dict[str, str]) -> MathProblem:
    """One pool record as a MathProblem; raises KeyError/ValueError naming what is missing."""
    def get(name: str, *aliases: str) -> object:
        for column in ([fields[name]] if name in fields else [name, *aliases]):
            if column in raw:
                return raw[column]
        raise KeyError(name)

    try:
        problem = _text(get("problem"))
    except KeyError:
        raise ValueError(f"no problem field among {sorted(raw)}; name it with --field problem=COLUMN") from None
    if not problem:
        raise ValueError("the problem text is empty")
    has_answer, has_solution = _has(raw, fields, "answer"), _has(raw, fields, "solution")
    if not (has_answer or has_solution):
        raise ValueError(f"no answer or solution field among {sorted(raw)}; name one with --field answer=COLUMN")
    answer = _text(get("answer")) if has_answer else None
    solution = _text(get("solution")) if has_solution else None
    if not answer and solution:  # MATH: the answer is the solution's last \boxed{}
        answer = (last_boxed(solution) or "").strip()
    try:
        pid = _text(get("pid", *ID_FIELDS[1:]))
    except KeyError:
        pid = None
    # NuminaMath has no id: the problem text names it, the same on every rerun (the cache keys on it)
    pid = pid or "p" + hashlib.sha256(problem.encode()).hexdigest()[:16]
    return MathProblem(pid=pid, problem=problem, answer=answer or "", solution=solution or None,
                       choices=raw.get("choices"))


def _rows(path: Path, fields: dict[str, str]) -> Iterator[tuple[int, MathProblem]]:
    """(row number counting the CSV header as row 1, problem); a bad row is an InputError at its row."""
    kind = FORMATS[path.suffix.lower()]
    try:
        table = pyarrow.csv.read_csv(path) if kind == "CSV" else pyarrow.parquet.read_table(path)
    except (pyarrow.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable {kind} file ({str(exc).splitlines()[0]})") from None
    first = 2 if kind == "CSV" else 1
    for row, raw in enumerate(table.to_pylist(), start=first):
        try:
            yield row, to_problem(raw, fields)
        except (KeyError, ValueError) as exc:
            raise InputError(f"{path}: row {row}: {exc}") from None


def read_pool(path: Path, fields: dict[str, str] | None = None, on_duplicate: OnDuplicate = "error") -> list[MathProblem]:
    """The problems of a pool file, one per pid (a repeated pid as `read_unique` says)."""
    fields = fields or {}
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix.lower() in FORMATS:
        return unique(_rows(path, fields), path, on_duplicate)
    return read_unique(path, lambda raw: to_problem(raw, fields), on_duplicate)
