"""A command with nothing to do is refused in one line and leaves nothing behind (issue 43): a probe
whose selection gives no job exits 2 saying why, and records no run; a compile of an empty pool exits 2
and makes no store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app

GARBLED = "b36a1161-390a-4c97-9b80-3af6f6fcf6ff"  # its reference answer "\1" is unusable: no parent job


def test_a_probe_with_no_job_exits_2_saying_why(sample_store: Path) -> None:
    result = CliRunner().invoke(app, ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1",
                                      "--pids", GARBLED, "--conditions", "C1", "--no-stage0",
                                      "--store", str(sample_store)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: nothing to probe: 1 family of 'release' selected, and no job at C1_direct; 1 of them have an "
        "unusable reference answer, whose parent jobs are skipped (--include-unusable asks them)")
    with sqlite3.connect(sample_store) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE kind = 'probe'").fetchone() == (0,)


def test_an_empty_pool_compiles_nothing_and_makes_no_store(tmp_path: Path) -> None:
    pool, store = tmp_path / "pool.jsonl", tmp_path / "s.sqlite"
    pool.write_text("", encoding="utf-8")
    result = CliRunner().invoke(app, ["compile", str(pool), "--teacher", "openai/t", "--base-url",
                                      "http://127.0.0.1:9/v1", "--store", str(store)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {pool}: no problems to compile (an empty pool)"
    assert not store.exists() and not Path(f"{store}-wal").exists()
