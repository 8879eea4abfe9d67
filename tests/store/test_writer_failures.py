"""The store's group-commit writer on a write that raises something other than sqlite3.Error (a
value SQLite cannot hold: an int past 64 bits): that write fails its caller, the others in its
group commit, the writer goes on, and the store opens again; `panels import` refuses such a count
in one line before the store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.store import PanelCell, Store, StoreError
from tests.helpers import rows

CELL = PanelCell(student="panel/x", source="release", pid="p1", target="C1_direct", n_correct=1, k=2, run_id="r")


async def test_a_write_of_an_int_past_64_bits_fails_its_caller_and_no_other(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Store.open(path) as store:
        bad = CELL.model_copy(update={"pid": "p2", "k": 2**63})
        # one group: the bad write, a good one, a flush; none may wait for ever
        done = await asyncio.wait_for(asyncio.gather(store.put_panel_cells([bad]), store.put_panel_cells([CELL]),
                                                     store.flush(), return_exceptions=True), 10)
        assert isinstance(done[0], StoreError) and "too large" in str(done[0])
        assert done[1:] == [None, None]
        # the writer goes on
        await asyncio.wait_for(store.put_panel_cells([CELL.model_copy(update={"pid": "p3"})]), 10)
    assert rows(path, "SELECT pid, k FROM panel_cells ORDER BY pid") == [("p1", 2), ("p3", 2)]
    async with Store.open(path) as again:  # a second run on the same store completes
        await asyncio.wait_for(again.put_panel_cells([CELL.model_copy(update={"pid": "p4"})]), 10)
        assert [c.pid for c in await again.panel_cells()] == ["p1", "p3", "p4"]


@pytest.mark.parametrize("k", [10**30, 2**63])
def test_panels_import_refuses_a_count_sqlite_cannot_hold_in_one_line(tmp_path: Path, sample_store: Path,
                                                                      k: int) -> None:
    pid = rows(sample_store, "SELECT pid FROM families LIMIT 1")[0][0]
    panel = tmp_path / "panel.jsonl"
    panel.write_text(json.dumps({"model": "panel/x", "condition": "C1_direct", "pid": pid, "n_correct": 1, "k": k})
                     + "\n")
    result = CliRunner().invoke(app, ["panels", "import", str(panel), "--store", str(sample_store)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and f"{panel}:1:" in result.output and "k is at most" in result.output
    panel.write_text(json.dumps({"model": "panel/x", "condition": "C1_direct", "pid": pid, "n_correct": 1, "k": 2})
                     + "\n")
    again = CliRunner().invoke(app, ["panels", "import", str(panel), "--store", str(sample_store)])
    assert again.exit_code == 0, again.output
    assert rows(sample_store, "SELECT k FROM panel_cells") == [(2,)]
