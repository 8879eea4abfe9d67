"""The leak rule on import (issue 43): every released family the repository ships imports, none refused
for a leak; the milestones that leak are listed and left out of Stage 0, C2 and C3 (`Family.leaking`),
as the paper does (Appendix N, P.1, T). Each expected leak below was read by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracleladder.demo import DEMO_FAMILIES
from oracleladder.experiment import Experiment

# file -> pid prefix -> (the milestones left out, those of them whose prompt states the answer)
EXPECTED = {
    "families_sample.jsonl": {
        "b36a1161": ([1], []),  # gold \{-1,1\} is the corrected answer x=\pm 1 (the released "\1" is garbled)
        "8aa407cb": ([1], []),  # gold 26 is the reference answer 26
        "c0677547": ([2], []),  # gold \lfloor 91/5 \rfloor = 18 states the reference answer 18
    },
    # 10e0dac9 (answer x^{2}+y^{2}=1\2, garbled) leaks nothing: its m0 gold x^{2}+y^{2}=1 is the given circle,
    # and the "1" of m1's prompt is no answer; 2f852d20: both prompts say "modulo 7", the answer
    # (the smallest n is 7) the problem never states
    "families_leaks.jsonl": {"2f852d20": ([0, 1], [0, 1])},
    "families_demo.jsonl": {},  # the demo's set (oracleladder/data), released record 9381ce52 among it
}


def _shipped(release_data: Path, name: str) -> Path:
    return Path(str(DEMO_FAMILIES)) if name == "families_demo.jsonl" else release_data / name


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_every_shipped_family_imports_and_exactly_its_leaks_are_listed(release_data, tmp_path, name):
    path = _shipped(release_data, name)
    async with Experiment(tmp_path / "s.sqlite") as ex:
        result = await ex.import_families(path)
        stored = await ex.store.families(source="release")
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert result.families == len(stored) == lines  # no family refused
    told = {pid[:8]: sorted(c.milestone for c in checks) for pid, checks in result.shown_leaks.items()}
    assert {pid[:8]: (leaking, told.get(pid[:8], [])) for pid, leaking in result.leaking.items()} == EXPECTED[name]
    assert all(c.check == "prompt_leak" for checks in result.shown_leaks.values() for c in checks)
    assert {f.pid[:8]: f.leaking for f in stored if f.leaking} == {p: lv for p, (lv, _) in EXPECTED[name].items()}
