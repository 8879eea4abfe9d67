"""What several test folders share: the checkout's root, a store file's rows as sqlite3 reads them and
an empty store as an older schema made it (here), `ladder` started as a terminal does (`terminal`), the
compile tests' problem and teacher plans (`roots`), which tests are integration tests
(`integration`), and a skip for a module that is not installed (`needs`)."""

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

from oracleladder.store.schema import MIGRATIONS, SQL_FUNCTIONS

# the checkout: a child process started with it on PYTHONPATH imports this oracleladder
REPO = Path(__file__).resolve().parents[2]


def rows(path: Path | str, sql: str) -> list[tuple]:
    """The rows of one query on a store file, read with sqlite3 as any other reader would."""
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def store_at(path: Path, version: int) -> sqlite3.Connection:
    """An empty store as schema ``version`` made it (its migrations applied in order), to fill with
    rows as that version wrote them."""
    con = sqlite3.connect(path, isolation_level=None)
    for name, (n_args, fn) in SQL_FUNCTIONS.items():
        con.create_function(name, n_args, fn)
    for step in MIGRATIONS[:version]:
        for stmt in step:
            con.execute(stmt)
    con.execute(f"PRAGMA user_version = {version}")
    return con


def needs(module: str, reason: str) -> pytest.MarkDecorator:
    """A test module's skip where ``module`` is not installed, found without importing it: each
    pytest-xdist worker collects every test module, so `pytest.importorskip` at a module's top would
    import the library (llama-cpp-python, Ray: a second or so of CPU) in both workers whether they
    run its tests or not."""
    # one that oracleladder._lazy defers is in sys.modules, and find_spec would read its spec: load it
    installed = module in sys.modules or importlib.util.find_spec(module) is not None
    return pytest.mark.skipif(not installed, reason=reason)
