"""The collector is kept off the objects that exist when a long run starts, and only for the run."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from oracleladder.compiler.workers import compile_all
from oracleladder.runtime import frozen_heap


@pytest.fixture
def thawed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The session's heap, frozen after collection (tests/conftest.py), thawed for the test and frozen
    again after it: a test of what frozen_heap freezes starts from a heap nobody froze. The full
    collections frozen_heap asks for are recorded (the freeze count at each), not made: over the whole
    session's heap, thawed, each took half a second of CPU."""
    collections: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *generation: collections.append(gc.get_freeze_count()))
    gc.unfreeze()
    yield collections
    gc.freeze()


def test_frozen_heap_freezes_for_the_block_only(thawed: list[int]):
    before = gc.get_freeze_count()
    with frozen_heap():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0
    assert thawed == [0]  # what was garbage already was collected before the freeze, not frozen
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a run that stops")
    assert gc.get_freeze_count() == 0


async def test_compile_all_runs_frozen_and_thaws(thawed: list[int]):
    counts: list[int] = []

    async def compile_one(problem: int) -> int:
        counts.append(gc.get_freeze_count())
        if problem == 2:
            raise ValueError("broken problem")
        return problem

    out = await compile_all([1, 2, 3], compile_one, lambda p, e: -p, concurrency=2)
    assert out == [1, -2, 3]
    assert all(c > 0 for c in counts) and gc.get_freeze_count() == 0


def test_a_heap_frozen_already_stays_frozen(thawed: list[int]):
    """A run inside a process that froze its heap itself (the test session does) leaves that freeze:
    thawing at the end of the run would have thawed the process's objects too."""
    gc.freeze()
    before = gc.get_freeze_count()
    with frozen_heap():
        assert gc.get_freeze_count() == before
    assert gc.get_freeze_count() == before and not thawed  # nor a collection of its own
