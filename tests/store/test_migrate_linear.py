"""Opening an old store is linear in its size: the migrations from v12 (indexes before backfills, each
run's model read once) do about 4 times the SQLite work on 4 times the calls, counted in SQLite's own
virtual-machine steps (no clock: the count is the same on any machine); and ``bench/migrate.py
--smoke`` runs."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from oracleladder.store.schema import MIGRATIONS, SQL_FUNCTIONS
from tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("bench_migrate", REPO / "bench" / "migrate.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _steps_to_migrate(path: Path) -> int:
    """SQLite's virtual-machine steps (in thousands) to take the v12 store at ``path`` to the current schema."""
    con = sqlite3.connect(path, isolation_level=None)
    for name, (n_args, fn) in SQL_FUNCTIONS.items():
        con.create_function(name, n_args, fn)
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    con.set_progress_handler(tick, 1000)
    for step in MIGRATIONS[bench.OLD:]:
        for stmt in step:
            con.execute(stmt)
    con.close()
    return steps


def test_migrating_a_v12_store_is_linear_in_its_calls(tmp_path: Path) -> None:
    work = []
    for n in (1_000, 4_000):
        bench.build(tmp_path / f"{n}.sqlite", n)
        work.append(_steps_to_migrate(tmp_path / f"{n}.sqlite"))
    assert work[1] / work[0] < 5, work  # linear: about 4; quadratic: about 16


def test_the_migration_bench_smoke_runs(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "migrate.py"), "--smoke"], capture_output=True, check=False,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout.splitlines()[-1])
    assert figures["calls"] == 2_000 and figures["ok"]
