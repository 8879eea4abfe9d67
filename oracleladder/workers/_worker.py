"""One worker: `python -m oracleladder.workers._worker FD [NAME=MODULE:FUNCTION ...]`, owned by a WorkerPool.

It imports the tasks named on its command line (a task that fails to import is left out: the pool
asks for it again when it is called, and reports why it cannot be had), says it is ready with the
names it holds, then answers each call read from the socket FD with its result (the calls come
in batches, each answered as it ends). Each call runs under its CPU-time limit: the kernel's
profiling timer (ITIMER_PROF, the process's user and system time) is armed for it, and SIGPROF,
left at its default action, ends the worker when the call passes it, in Python or in C code alike. It never imports the caller's `__main__` (so any script, `python -c`, stdin or a thread can use it), and it exits
quietly when its parent goes: EOF on the socket, a broken pipe, or a new parent pid.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from .._lazy import load
from .pool import LOAD, READY, TaskError


def _exit_when_orphaned(parent: int) -> None:
    """A worker stuck in a long call never reads its EOF; the parent pid tells it instead."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _answer(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn``'s result, or the TaskError that says what it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - reported to the caller, the worker goes on
        return TaskError(type(e).__name__, str(e)[:500])


def _limited(fn: Callable[..., Any], kwargs: dict[str, Any], cpu_s: float) -> Any:
    """``_answer`` of ``fn(**kwargs)``, the worker killed by SIGPROF if the call passes ``cpu_s`` of CPU."""
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    try:
        return _answer(fn, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _load(tasks: dict[str, Callable[..., Any]], name: str, target: str) -> str:
    tasks[name] = load(target)
    return READY


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the pool decides
    conn = Connection(int(sys.argv[1]))
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    tasks: dict[str, Callable[..., Any]] = {}
    for name, _, target in (arg.partition("=") for arg in sys.argv[2:]):
        try:
            tasks[name] = load(target)
        except Exception:  # noqa: BLE001 - said when the task is called
            pass
    # the collector stays off the imported libraries (SymPy's hundreds of thousands of objects), as
    # a run's does (runtime.frozen_heap): each full collection walked them all again
    gc.collect()
    gc.freeze()
    try:
        conn.send((READY, sorted(tasks)))
        while True:
            kind, *what = conn.recv()
            if kind == LOAD:
                name, target = what
                conn.send(_answer(_load, tasks, name, target))
            else:  # a batch of calls, each answered as it ends
                for name, kwargs, cpu_s in what[0]:
                    conn.send(_limited(tasks[name], kwargs, cpu_s) if name in tasks else TaskError("KeyError", name))
    except (EOFError, OSError):  # the parent closed the pool or died: nothing to say
        pass
    os._exit(0)  # no interpreter teardown that could print to a closed stream


if __name__ == "__main__":
    main()
