"""`--shard I/N`: a split of the families by a stable hash of the pid, whole and disjoint, read from
its spelling or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracleladder.ladder import WHOLE, Shard
from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl


def test_the_shards_of_a_set_are_disjoint_and_whole(release_data: Path) -> None:
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    shards = [Shard(i, 3).of(families) for i in (1, 2, 3)]
    pids = [f.pid for shard in shards for f in shard]
    assert sorted(pids) == sorted(f.pid for f in families) and len(set(pids)) == len(pids)
    assert all(shards)  # 55 families: none of 3 shards is empty
    assert WHOLE.of(families) == families


def test_a_family_keeps_its_shard_whatever_the_order(release_data: Path) -> None:
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))
    shard = Shard(2, 4)
    assert [f.pid for f in shard.of(families[::-1])] == [f.pid for f in shard.of(families)][::-1]
    assert {f.pid for f in shard.of(families[:10])} == {f.pid for f in shard.of(families) if f in families[:10]}


def test_spellings() -> None:
    assert Shard.parse("2/8") == Shard(2, 8) and str(Shard.parse(" 1 / 2 ")) == "1/2"
    for bad in ("0/2", "3/2", "a/b", "1", "1/0", "-1/2", "1/2/3", ""):
        with pytest.raises(ValueError):
            Shard.parse(bad)
