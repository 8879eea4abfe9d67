"""What several test folders share: the checkout's root and a store file's rows as sqlite3 reads them
(here), `ladder` started as a terminal does (`terminal`), the compile tests' problem and teacher plans
(`roots`), and which tests are integration tests (`integration`)."""

import sqlite3
from pathlib import Path

# the checkout: a child process started with it on PYTHONPATH imports this oracleladder
REPO = Path(__file__).resolve().parents[2]


def rows(path: Path | str, sql: str) -> list[tuple]:
    """The rows of one query on a store file, read with sqlite3 as any other reader would."""
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
