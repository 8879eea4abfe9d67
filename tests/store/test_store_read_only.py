"""A command that writes the store, given one it cannot write, says so in one line: "cannot write the
store at PATH: read-only" (before: "not an OracleLadder store", or a failed write after the open)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LADDER = [sys.executable, "-m", "oracleladder.cli"]


def _unprivileged(*args: str) -> subprocess.CompletedProcess:
    """`ladder` as a user the file modes bind: root keeps its capabilities to override them out."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root, and setpriv (util-linux) is not there to drop the override of file modes")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]
    return subprocess.run([*prefix, *LADDER, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("read_only", ["file", "folder"])
def test_a_store_that_cannot_be_written_is_one_line(sample_store: Path, release_data: Path, tmp_path: Path,
                                                     read_only: str) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    store = folder / "s.sqlite"
    shutil.copy(sample_store, store)  # the store alone, in WAL mode, without its -wal and -shm files
    (store if read_only == "file" else folder).chmod(0o444 if read_only == "file" else 0o555)
    try:
        result = _unprivileged("import", str(release_data / "families_sample.jsonl"), "--source", "again",
                               "--store", str(store))
        readable = _unprivileged("runs", "--store", str(store))  # a command that only reads still works
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)
    assert result.returncode == 1 and result.stderr.strip() == f"error: cannot write the store at {store}: read-only"
    assert readable.returncode == 0, readable.stderr
