"""How a long run uses the process: enough work in flight for every client slot, a garbage
collector that stays off what existed before the run, and no work left running when one part fails.

A run holds the imported libraries (SymPy, pydantic, the SDKs, math-verify): hundreds of
thousands of objects that never die. CPython's full collections walk all of them, stalling the
event loop 50-100 ms each time, and every call in flight waits out each stall. Freezing them for
the run (``gc.freeze``) leaves the collector only the objects the run itself makes.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# Jobs (problems to compile, probes to grade) in flight per client slot: a job between two calls
# (validating a plan, grading an answer, storing it) holds no slot, so a second job per slot keeps
# every slot busy. More only adds jobs that wait.
JOBS_PER_SLOT = 2


def jobs_in_flight(client_slots: int, requested: int | None = None) -> int:
    """How many jobs a long run keeps in flight: ``requested``, else ``JOBS_PER_SLOT`` per client slot."""
    return requested or JOBS_PER_SLOT * client_slots


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the collector off every object alive now, until the block ends. A heap that the process
    froze already (the test session does, after collecting: tests/conftest.py) is left as it is: the
    thaw at the end would undo that freeze too (``gc.unfreeze`` thaws everything)."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()  # what is already garbage goes now, not into the frozen set
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """``asyncio.gather``, except that the first exception cancels the others, and waits for them,
    before it propagates: none goes on calling a client that is being closed (a provider would open
    its session again, and leave it unclosed: "Unclosed client session" after the error)."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
