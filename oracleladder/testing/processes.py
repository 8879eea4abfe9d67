"""The loopback server as a process of its own, seen from its parent (benchmarks, and tests of several
processes): ``spawn`` starts one (``python -m oracleladder.testing.loopback``, or a script that runs its own
with `LoopbackServer.serve`) and returns its port, ``remote_stats`` reads its counters."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import urllib.request
from typing import Any


def spawn(argv: list[str], *, cwd: str | os.PathLike[str] | None = None,
          start_timeout_s: float = 20.0) -> tuple[subprocess.Popen, int]:
    """Start a server process (``argv`` must end in a command that accepts ``--port-file``, as
    ``python -m oracleladder.testing.loopback`` does) and return it with its port."""
    port_file = tempfile.mktemp(prefix="loopback-port-")
    proc = subprocess.Popen([*argv, "--port-file", port_file], cwd=cwd, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + start_timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(port_file):
            with open(port_file) as f:
                port = int(f.read())
            os.unlink(port_file)
            return proc, port
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"loopback server did not start: {' '.join(argv)}")


def remote_stats(port: int, *, reset: bool = False) -> dict[str, Any]:
    """The counters of a server on 127.0.0.1:``port`` (another process); ``reset=True`` zeroes them
    and returns ``{"ok": true}``."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/{'reset' if reset else 'stats'}",
                                 method="POST" if reset else "GET")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())
