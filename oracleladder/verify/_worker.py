"""One grading worker: `python -m oracleladder.verify._worker FD`, owned by a VerifierPool.

It reads pickled `(task, kwargs)` calls from the socket FD and answers each with its result. It
never imports the caller's `__main__` (so any script, `python -c`, stdin or a thread can grade),
and it exits quietly when its parent goes: EOF on the socket, a broken pipe, or a new parent pid.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Callable

from oracleladder.schemas.types import Label
from oracleladder.validators import check_family

from .core import Verdict, verify_inprocess
from .pool import READY, TaskError

def _grade(**kwargs: Any) -> Verdict:
    try:
        return verify_inprocess(**kwargs)
    except Exception as e:  # a crash on one input is a verdict, not a dead worker
        return Verdict(Label.NOT_ACCEPT, f"parse error: {type(e).__name__}", None)


TASKS: dict[str, Callable[..., Any]] = {"verify": _grade, "check_family": check_family}


def _exit_when_orphaned(parent: int) -> None:
    """A worker stuck in a long SymPy call never reads its EOF; the parent pid tells it instead."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the pool decides
    conn = Connection(int(sys.argv[1]))
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    try:
        conn.send(READY)
        while True:
            task, kwargs = conn.recv()
            try:
                result = TASKS[task](**kwargs)
            except Exception as e:  # noqa: BLE001 - reported to the caller, the worker goes on
                result = TaskError(type(e).__name__, str(e)[:500])
            conn.send(result)
    except (EOFError, OSError):  # the parent closed the pool or died: nothing to say
        pass
    os._exit(0)  # no interpreter teardown that could print to a closed stream


if __name__ == "__main__":
    main()
