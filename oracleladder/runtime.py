"""How a long run uses the process: enough work in flight for every client slot, and a garbage
collector that stays off what existed before the run.

A run holds the imported libraries (SymPy, pydantic, the SDKs, math-verify): hundreds of
thousands of objects that never die. CPython's full collections walk all of them, stalling the
event loop 50-100 ms each time, and every call in flight waits out each stall. Freezing them for
the run (``gc.freeze``) leaves the collector only the objects the run itself makes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Jobs (problems to compile, probes to grade) in flight per client slot: a job between two calls
# (validating a plan, grading an answer, storing it) holds no slot, so a second job per slot keeps
# every slot busy. More only adds jobs that wait.
JOBS_PER_SLOT = 2


def jobs_in_flight(client_slots: int, requested: int | None = None) -> int:
    """How many jobs a long run keeps in flight: ``requested``, else ``JOBS_PER_SLOT`` per client slot."""
    return requested or JOBS_PER_SLOT * client_slots


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the collector off every object alive now, until the block ends."""
    gc.collect()  # what is already garbage goes now, not into the frozen set
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
