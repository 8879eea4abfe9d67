"""Base URLs through the CLI: one parsed and checked once (a malformed one, a port out of range, a
scheme that is no http(s), a user and password beside --api-key-env: one line, exit 2), and a
password in one never shown nor stored: a run against an unreachable loopback port prints it nowhere,
and the store's dump does not hold it."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app

PASSWORD = "sekritpw"


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _probe(store: Path, url: str, *extra: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, ["probe", "--student", "openai/s", "--store", str(store), "--base-url", url,
                                    "--k", "1", "--limit", "3", "--no-stage0", *extra], env=env)


def test_a_password_in_the_base_url_is_shown_and_stored_nowhere(sample_store: Path, quick_retries: None,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    result = _probe(sample_store, f"http://user:{PASSWORD}@127.0.0.1:{_closed_port()}/v1")
    assert result.exit_code == 1, result.output
    assert "cannot connect to http://user:[REDACTED]@127.0.0.1" in result.output
    lines = [*result.output.splitlines(), *(r.getMessage() for r in caplog.records)]
    assert lines and not [line for line in lines if PASSWORD in line]
    con = sqlite3.connect(sample_store)
    dump = list(con.iterdump())
    con.close()
    assert any("CannotConnect" in line for line in dump)  # the failed calls are stored, with their error
    assert not [line for line in dump if PASSWORD in line]


@pytest.mark.parametrize(("url", "said"), [
    ("http://[::1", "is malformed: Invalid IPv6 URL"),
    ("http://127.0.0.1:99999/v1", "is malformed: Port out of range"),
    ("ftp://127.0.0.1/v1", "is not an http(s) URL"),
    (f"http://user:{PASSWORD}@127.0.0.1:8000/v1", "holds a user and password, and --api-key-env names a key"),
])
def test_a_bad_base_url_is_one_line(sample_store: Path, url: str, said: str) -> None:
    result = _probe(sample_store, url, "--api-key-env", "SERVER_KEY", env={"SERVER_KEY": "k-1234"})
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and said in result.output and PASSWORD not in result.output
