"""`ladder view` over HTTP, as a hostile page or an unlucky client meets it: a Host header that is not its
own gets nothing of the report (DNS rebinding), an idle connection stalls no other, a store that cannot
be read is an error page and one line on the terminal, a client that hangs up is no error, and SIGTERM
or Ctrl-C removes the temporary folder that holds the report, golds included."""
from __future__ import annotations

import asyncio
import http.client
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas import Family, to_released
from oracleladder.schemas.jsonl import read_jsonl, write_jsonl
from oracleladder.store import Store
from oracleladder.validators import reference_answer_problem
from tests.helpers.terminal import ladder
from tests.viewer.stores import fill

STUDENT = "openai/student-a"
LONG = "A long answer. " * 150_000  # about 2 MB: its page's file does not fit in a socket's buffers


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Path:
    """Two released families probed by one student, one answer about 2 MB long."""
    tmp = tmp_path_factory.mktemp("view")
    families = [f for f in read_jsonl(release_data / "families_sample.jsonl", Family)
                if reference_answer_problem(f) is None][:2]
    write_jsonl(tmp / "families.jsonl", (to_released(f) for f in families))
    store = tmp / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(tmp / "families.jsonl"), "--store", str(store)]).exit_code == 0
    fill(store, families, {STUDENT: 0.5}, k=1, grade=False)

    async def lengthen() -> None:
        async with Store.open(store) as s:
            r = next(r for r in await s.rollouts(student=STUDENT, pid=families[0].pid) if r.target == "C1_direct")
            await s.put_rollout(r.model_copy(update={"response": LONG}))

    asyncio.run(lengthen())
    return store


class View:
    """A `ladder view` child process, its port and its temporary folder's parent."""

    def __init__(self, store: Path, tmp: Path) -> None:
        self.tmp = tmp / "tmpdir"
        self.tmp.mkdir()
        self.proc = ladder("view", "--student", STUDENT, "--store", str(store), "--port", "0",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(self.tmp)})
        line = self.proc.stdout.readline()
        match = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + self.proc.stderr.read()
        self.port = int(match.group(1))

    def get(self, path: str = "/", host: str | None = None, timeout: float = 20) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", f"127.0.0.1:{self.port}" if host is None else host)
            conn.endheaders()
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def folders(self) -> list[Path]:
        return list(self.tmp.glob("ladder-view-*"))

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        """Send ``sig``; the exit code and what the process wrote on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return code, self.proc.stderr.read()


@pytest.fixture
def view(store: Path, tmp_path: Path) -> Iterator[View]:
    v = View(store, tmp_path)
    yield v
    v.stop()


def test_a_host_header_not_its_own_gets_nothing_of_the_report(view: View) -> None:
    for path in ("/", "/data/overview.js", "/data/f/0.js"):
        for host in (f"127.0.0.1:{view.port}", f"localhost:{view.port}", f"LOCALHOST:{view.port}",
                     f"[::1]:{view.port}"):
            assert view.get(path, host)[0] == 200, (path, host)
        for host in ("attacker.example", f"attacker.example:{view.port}", "127.0.0.1", f"127.0.0.1:{view.port + 1}",
                     f"127.0.0.1.attacker.example:{view.port}", ""):
            status, body = view.get(path, host)
            assert status in (400, 421), (path, host, status)
            assert b"ladderOverview" not in body and b"ladderFamily" not in body and b"<script" not in body


def test_an_idle_connection_stalls_no_other_request(view: View) -> None:
    idle = [socket.create_connection(("127.0.0.1", view.port)) for _ in range(3)]
    idle[1].sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a request that never ends
    try:
        # each answered within its own timeout: the single-threaded server waited on the first for ever
        assert view.get("/", timeout=8)[0] == 200
        assert view.get("/data/overview.js", timeout=8)[0] == 200
    finally:
        for s in idle:
            s.close()


def test_a_store_that_cannot_be_read_is_an_error_page_and_one_line(store: Path, tmp_path: Path) -> None:
    live = tmp_path / "live.sqlite"
    shutil.copy(store, live)
    view = View(live, tmp_path)
    try:
        assert view.get()[0] == 200
        good = live.read_bytes()
        live.write_bytes(b"not a store " * 1000)
        for _ in range(2):
            status, body = view.get()
            assert status == 503 and b"could not be rebuilt" in body and b"not an OracleLadder store" in body
        live.write_bytes(good)  # the store is back: so is the report
        assert view.get()[0] == 200
    finally:
        code, stderr = view.stop()
    assert code == 0
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and all("could not be rebuilt" in line and str(live) in line for line in lines), stderr


def test_a_client_that_hangs_up_is_no_error(view: View) -> None:
    sizes = {n: len(view.get(f"/data/f/{n}.js")[1]) for n in (0, 1)}
    page = f"/data/f/{max(sizes, key=sizes.__getitem__)}.js"
    assert max(sizes.values()) > len(LONG)
    for wait in (0.0, 0.001, 0.01, 0.05) * 3:  # each asks for the 2 MB page and resets the connection
        s = socket.create_connection(("127.0.0.1", view.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the page cannot all be sent before the reset
        s.sendall(f"GET {page} HTTP/1.0\r\nHost: 127.0.0.1:{view.port}\r\n\r\n".encode())
        time.sleep(wait)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    assert view.get(page)[0] == 200
    code, stderr = view.stop()
    assert code == 0 and stderr == "", stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_remove_the_temporary_folder(view: View, sig: int) -> None:
    assert view.get("/data/f/0.js")[0] == 200
    (folder,) = view.folders()
    assert any(folder.rglob("*.js"))  # the report, golds included, is on disk while it runs
    code, stderr = view.stop(sig)
    assert code == 0, stderr
    assert view.folders() == [], "the report was left behind"
