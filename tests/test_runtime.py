"""The collector is kept off the objects that exist when a long run starts, and only for the run."""

from __future__ import annotations

import gc

import pytest

from oracleladder.compiler.workers import compile_all
from oracleladder.runtime import frozen_heap


def test_frozen_heap_freezes_for_the_block_only():
    before = gc.get_freeze_count()
    with frozen_heap():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a run that stops")
    assert gc.get_freeze_count() == 0


async def test_compile_all_runs_frozen_and_thaws():
    counts: list[int] = []

    async def compile_one(problem: int) -> int:
        counts.append(gc.get_freeze_count())
        if problem == 2:
            raise ValueError("broken problem")
        return problem

    out = await compile_all([1, 2, 3], compile_one, lambda p, e: -p, concurrency=2)
    assert out == [1, -2, 3]
    assert all(c > 0 for c in counts) and gc.get_freeze_count() == 0
