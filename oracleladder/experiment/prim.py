"""PRIM's stages on `Experiment` (docs/prim.md): the gold primitives' import, the four dimensions
probed, a student's primitives scored by the judge, and the analyses read back."""

from __future__ import annotations

import os

from ..prim.gold import read_gold
from ..store import Store


class PrimStages:
    """Mixed into `Experiment`: its ``store`` is the experiment's."""

    store: Store

    async def import_primitives(self, path: str | os.PathLike[str], *, fields: tuple[str, ...] = ()) -> int:
        """Gold primitives and reference solutions from a JSONL file (`prim.gold`); the whole file is
        read first, so a bad line imports nothing. Returns how many."""
        records = read_gold(path, fields)
        for r in records:
            await self.store.put_primitive(r.primitive, wait=False)
            if r.solution is not None:
                await self.store.put_solution(r.pid, r.solution, wait=False)
        await self.store.flush()
        return len(records)
