"""A run split by family into N shards (`--shard I/N`), for any scheduler (Slurm arrays, several
machines): each family belongs to one shard by a stable hash of its pid, not by its place in the set,
so the same family lands in the same shard on every machine and every run, and the N shards' union is
the whole run. Only the families probed are split: the controls still draw their donors from the whole set."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from .contract import HasPid

T = TypeVar("T", bound=HasPid)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: I must be between 1 and N")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"``, e.g. ``"2/8"``; anything else is a ValueError saying the spelling."""
        index, slash, count = text.partition("/")
        if not (slash and index.strip().isdigit() and count.strip().isdigit()):
            raise ValueError(f"shard {text!r}: expected I/N, e.g. 1/4 (shard I of N, from 1)")
        return cls(int(index), int(count))

    def holds(self, pid: str) -> bool:
        digest = hashlib.sha256(pid.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def of(self, items: Sequence[T]) -> list[T]:
        """The families (or problems) of this shard, in their order."""
        return [item for item in items if self.holds(item.pid)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


WHOLE = Shard(1, 1)  # the unsplit run
