"""The replication view's reading side (paper Table 2, the explainer's Figure 6): each roadmap set named
with its own student and threshold, read at one setting as `ladder report` reads a student
(`report.tables.replication` makes the table, `report.replication` its files and figure).

A set is spelled ``SET[,tau=N][,student=NAME]`` (``math500,tau=3``): a comma, since a roadmap set (a
teacher) and a student are model strings that may hold a colon (``ollama/qwen3:8b``) but no comma."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..report.tables import ReplicationColumn, replication_column
from ..schemas.jsonl import InputError
from .reader import Reader
from .selection import Choice

KEYS = ("tau", "student")


@dataclass(frozen=True)
class ReplicationSet:
    """One column of the view: a roadmap set, the student read on it and its tau."""

    source: str
    student: str
    tau: int = 1


def parse_set(text: str, student: str | None, tau: int = 1) -> ReplicationSet:
    """``SET[,tau=N][,student=NAME]`` with ``student`` and ``tau`` the defaults; an InputError saying the
    spelling otherwise."""
    name, *given = (part.strip() for part in text.split(","))
    said = f"'{text}': a set is SET[,tau=N][,student=NAME]"
    options: dict[str, str] = {}
    for part in given:
        key, eq, value = part.partition("=")
        if not eq or key not in KEYS or not value or key in options:
            raise InputError(f"{said}; '{part}' is not one of {', '.join(k + '=...' for k in KEYS)}, once each")
        options[key] = value
    if not name:
        raise InputError(f"{said}; it names no set")
    if "tau" in options:
        if not options["tau"].isdigit() or int(options["tau"]) < 1:
            raise InputError(f"{said}; tau is a whole number of at least 1, not '{options['tau']}'")
        tau = int(options["tau"])
    chosen = options.get("student", student)
    if chosen is None:
        raise InputError(f"{said}; give its student=NAME, or --student for every set")
    return ReplicationSet(source=name, student=chosen, tau=tau)


async def replication(reader: Reader, sets: Sequence[ReplicationSet], *, use_corrections: bool = False,
                      choice: Choice = Choice()) -> list[ReplicationColumn]:
    """A column per set: its student's results on it at the one setting ``choice`` picks (refused,
    naming the settings, where the store holds several and none is picked), counted at the set's tau."""
    columns = []
    for s in sets:
        [picked] = await reader.picked(s.student, source=s.source, choice=choice)
        _, results, missing = await reader.results(s.student, source=s.source, use_corrections=use_corrections,
                                                   choice=choice)
        columns.append(replication_column(s.source, s.student, s.tau, picked.describe(), results, missing))
    return columns
