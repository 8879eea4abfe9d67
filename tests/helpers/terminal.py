"""`ladder` in a child process as a terminal starts it. A background job of a shell (a CI script
started with `&` or nohup) ignores SIGINT, a child inherits that, and the Ctrl-C a test sends (SIGINT)
would never reach it; the child here gets SIGINT's default disposition back."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

LADDER = [sys.executable, "-m", "oracleladder.cli"]


def ladder(*args: str, **kw: Any) -> subprocess.Popen:
    return subprocess.Popen([*LADDER, *args], preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)
