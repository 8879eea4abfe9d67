"""Leak levels on hand cases, and every check run on the released sample families."""

from __future__ import annotations

from pathlib import Path

from oracleladder.schemas import Family
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.validators import check_family
from oracleladder.validators.leak import leak_level


def test_leak_levels() -> None:
    assert leak_level(r"\frac{1}{2}", r"\frac{1}{2}") == "strict"
    assert leak_level(r"\frac{1}{2}", r"\frac {1} {2}") == "strict"
    assert leak_level(r"a\le -2", r"a \leq -2") == "equivalent"
    assert leak_level("0.5", r"\frac{1}{2}") == "equivalent"
    assert leak_level("3", "-3") is None
    assert leak_level("(1,2)", "(2,1)") is None


def test_every_family_gets_a_report(shared_data: Path) -> None:
    families = list(read_jsonl(shared_data / "families_sample.jsonl", Family))
    reports = [check_family(f) for f in families]
    assert [r.pid for r in reports] == [f.pid for f in families]
    assert all(r.checks for r in reports)
    for report in reports:
        for failure in report.failures():
            assert failure.reason, failure
