"""`ladder prim import FILE`: human gold primitives and reference solutions, one JSONL record per
problem (pid, essential_property, solution_principle, core_concept, primary_type, secondary_types,
family, solution); ``--field NAME=COLUMN`` maps other column names, as for pools. A bad line is an
InputError naming file:line, and the whole file is read before anything is stored."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from pydantic import BaseModel

from ..schemas.jsonl import InputError, read_unique
from ..schemas.prim import PrimPrimitive

NAMES = ("pid", "essential_property", "solution_principle", "core_concept", "primary_type", "secondary_types",
         "family", "solution")


class GoldRecord(BaseModel):
    primitive: PrimPrimitive
    solution: str | None = None

    @property
    def pid(self) -> str:
        return self.primitive.pid


def parse_fields(specs: Sequence[str]) -> dict[str, str]:
    """`core_concept=kernel` pairs: our field name = the file's column."""
    fields: dict[str, str] = {}
    for spec in specs:
        ours, sep, theirs = spec.partition("=")
        if not sep or ours.strip() not in NAMES or not theirs.strip():
            raise InputError(f"--field {spec!r}: expected NAME=COLUMN with NAME one of {', '.join(NAMES)}")
        fields[ours.strip()] = theirs.strip()
    return fields


def to_record(raw: dict, fields: dict[str, str]) -> GoldRecord:
    """One line as a gold primitive (routed from its primary type when the family is absent) and its
    solution; a ValueError (or pydantic's) says what is wrong."""
    values = {name: raw[fields.get(name, name)] for name in NAMES if fields.get(name, name) in raw}
    if "pid" not in values:
        raise ValueError(f"no pid (column '{fields.get('pid', 'pid')}')")
    pid = values["pid"]
    if isinstance(pid, bool) or not isinstance(pid, (str, int)) or not str(pid).strip():
        raise ValueError(f"pid {json.dumps(pid)} is not a problem's id (text or a number)")
    values["pid"] = str(pid)
    if values.get("family") is not None:
        values["family"] = str(values["family"]).upper()
    solution = values.pop("solution", None)
    if solution is not None and not isinstance(solution, str):
        raise ValueError("solution is not text")
    return GoldRecord(primitive=PrimPrimitive.model_validate({**values, "provenance": "gold"}), solution=solution)


def read_gold(path: str | os.PathLike[str], fields: Sequence[str] = ()) -> list[GoldRecord]:
    """Every record of ``path``, or the InputError of its first bad line (file:line)."""
    mapping = parse_fields(fields)
    return read_unique(path, lambda raw: to_record(raw, mapping))
