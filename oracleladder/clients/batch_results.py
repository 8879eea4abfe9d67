"""An ended batch's results, read row by row into each call's outcome (batch mode, `batch`).

A line that cannot be read (cut short, not JSON, no custom_id) leaves its call without a row, and a call
whose rows disagree is without an answer: either is a transient error, so the call goes into the next
batch, said in a warning. A read cut off (a transient error) is read again, ``READ_ATTEMPTS`` reads at most."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from .base import ChatResult
from .batch_api import BatchAPI, Outcome
from .errors import ServerError, TransientError

log = logging.getLogger(__name__)
READ_ATTEMPTS = 4  # reads of an ended batch's results


@dataclass
class Rows:
    """What a batch's results file held: ``count`` rows, the outcomes of the calls asked by key, and the
    rows that could not be read."""

    count: int = 0
    found: dict[str, list[Outcome]] = field(default_factory=dict)
    unreadable: list[Outcome] = field(default_factory=list)


async def read_rows(api: BatchAPI, batch_id: str, keys: set[str], *, poll: float, max_poll: float) -> Rows:
    """The rows of the ended batch ``batch_id`` for the calls ``keys`` (the rows of calls not asked are left
    in it); a read cut off is read again after ``poll`` seconds, backing off to ``max_poll``."""
    delay = poll
    for attempt in range(1, READ_ATTEMPTS + 1):
        rows = Rows()
        try:
            async for key, outcome in api.results(batch_id):
                rows.count += 1
                if key is None:
                    rows.unreadable.append(outcome)
                elif key in keys:
                    rows.found.setdefault(key, []).append(outcome)
            return rows
        except TransientError as e:
            if attempt == READ_ATTEMPTS:
                raise
            log.warning("%s batch %s: reading its results: %s (reading again)", api.name, batch_id, e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_poll)
    raise AssertionError("unreachable: the last read returns or raises")


def _said(outcome: Outcome) -> str:
    """What a row says: its answer, or its error."""
    return outcome.text if isinstance(outcome, ChatResult) else f"{type(outcome).__name__}: {outcome}"


def outcomes(name: str, batch_id: str, state: str, keys: set[str], rows: Rows) -> dict[str, Outcome]:
    """Each call's outcome from the rows of ``batch_id`` (``state``: how it ended): its row's, or a
    `ServerError` (the call goes again) where its rows disagree or none could be read."""
    if rows.unreadable:
        log.warning("%s batch %s: %d results row(s) could not be read, their calls go again (%s)",
                    name, batch_id, len(rows.unreadable), rows.unreadable[0])
    disagree = {key for key, said in rows.found.items() if len({_said(o) for o in said}) > 1}
    if disagree:
        log.warning("%s batch %s: %d call(s) have rows with different answers (custom_id %s, ...): they go "
                    "again", name, batch_id, len(disagree), min(disagree))
    out: dict[str, Outcome] = {}
    for key in keys:
        if key in disagree:
            out[key] = ServerError(f"{name} batch {batch_id} has {len(rows.found[key])} rows for it "
                                   "with different answers")
        elif key in rows.found:
            out[key] = rows.found[key][0]
        else:
            out[key] = ServerError(f"{name} batch {batch_id} ({state}) has no readable result for it")
    return out
