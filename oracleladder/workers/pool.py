"""Worker processes with a hard wall-clock limit per task, and an honest failure when one breaks.

concurrent.futures cannot kill one hung task, so each worker is a process we own, fed over a
socket. Workers are `python -m oracleladder.workers._worker`, never a fork or a re-import of the
caller's `__main__`, so any calling context can use them. A task is a function known by name: the
layer that owns it registers it (`register_task("verify", "oracleladder.verify.core:verify_inprocess")`),
and a worker imports it when it starts (or, for a task registered later, before its first call), so
an import never counts against a task's limit. What can happen to one call:

* the worker answers: that result;
* the call passes its limit: the worker is killed and replaced, TaskTimedOut;
* the task raises in the worker: TaskRaised (kind and message), the worker goes on;
* the worker dies or breaks on the call (OOM killer, segfault): the call is tried once more on a
  fresh worker, then WorkerDied -- a failure, never an answer;
* a worker found dead before the call is sent is replaced silently (the call was never sent);
* workers cannot start, or cannot import the task: WorkersUnavailable.

A pool belongs to the process that made it: after `os.fork` the child starts its own workers
and never reads the parent's sockets (they would deliver the parent's answers).
"""

from __future__ import annotations

import asyncio
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

READY = "ready"
LOAD, RUN = "load", "run"  # what the pool asks of a worker: import a task, or call it
START_TIMEOUT_S = 120.0  # starting a worker or importing a task (SymPy) on a loaded machine; never a call's
# workers start in the directory holding this oracleladder, so they import the caller's own checkout
_ROOT = str(Path(__file__).resolve().parents[2])
_WORKER = [sys.executable, "-m", "oracleladder.workers._worker"]

R = TypeVar("R")

_tasks: dict[str, str] = {}  # name: "module:function", as registered


def register_task(name: str, target: str) -> None:
    """Make the function ``target`` ("package.module:function", called with keyword arguments, its
    arguments and result picklable) callable in the workers as ``name``."""
    if _tasks.setdefault(name, target) != target:
        raise ValueError(f"worker task {name!r} is registered already, as {_tasks[name]}")


def registered() -> dict[str, str]:
    """The tasks registered in this process (name: target), to register the same in another (a
    cluster's workers)."""
    return dict(_tasks)


class WorkersUnavailable(RuntimeError):
    """The worker processes cannot start, or cannot import a task, so nothing can run in them."""


class TaskFailed(RuntimeError):
    """A call in a worker gave no result."""


class TaskTimedOut(TaskFailed):
    def __init__(self, task: str, limit_s: float) -> None:
        super().__init__(f"{task}: no result within {limit_s:g} s")
        self.limit_s = limit_s


class WorkerDied(TaskFailed):
    def __init__(self, task: str, why: str) -> None:
        super().__init__(f"{task}: the worker died twice ({why})")
        self.why = why  # how the second worker ended: "killed by signal 9", "exit code 1", ...


class TaskRaised(TaskFailed):
    def __init__(self, task: str, kind: str, message: str) -> None:
        super().__init__(f"{task} raised {kind}: {message}")
        self.kind, self.message = kind, message


@dataclass(frozen=True)
class TaskError:
    """What a worker sends back instead of a result when the task raised."""

    kind: str
    message: str


_LIMIT = object()  # a call's limit passed


class _Worker:
    def __init__(self) -> None:
        self.targets = dict(_tasks)  # imported as it starts
        ours, theirs = socket.socketpair()
        tasks = [f"{name}={target}" for name, target in self.targets.items()]
        try:
            self.proc = subprocess.Popen([*_WORKER, str(theirs.fileno()), *tasks], pass_fds=(theirs.fileno(),),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=_ROOT)
        except OSError as e:
            ours.close()
            raise WorkersUnavailable(f"cannot start a worker with {sys.executable!r}: {e}") from e
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        self.loaded: set[str] = set()  # the tasks it imported

    def wait_ready(self) -> None:
        if self.ready:
            return
        try:
            if self.conn.poll(START_TIMEOUT_S):
                said, names = self.conn.recv()
                self.ready, self.loaded = said == READY, set(names)
        except (EOFError, OSError, ValueError):
            pass
        if self.ready:
            return
        self.kill()
        raise WorkersUnavailable(
            f"a worker did not start ({self.ended()}; its error, if any, is on stderr above); check that "
            f"`{sys.executable} -m oracleladder.workers._worker` can import oracleladder and the modules of its "
            f"tasks ({', '.join(sorted(set(self.targets.values()))) or 'none registered'})")

    def load(self, task: str) -> None:
        """Import ``task`` in this worker if it did not at its start (it failed, or came later)."""
        if task in self.loaded:
            return
        target = _tasks[task]
        try:
            self.conn.send((LOAD, task, target))
            said = self.conn.recv() if self.conn.poll(START_TIMEOUT_S) else None
        except (EOFError, OSError):
            said = None
        if said == READY:
            self.loaded.add(task)
            return
        if isinstance(said, TaskError):  # the import raised: the worker itself is fine
            why = f"{said.kind}: {said.message}"
        else:  # no answer in time, or none at all: a late one must not be read as a call's result
            self.kill()
            why = f"no answer ({self.ended()})"
        raise WorkersUnavailable(f"a worker cannot import its task {task!r} ({target}): {why}")

    def run(self, task: str, kwargs: Mapping[str, Any], timeout_s: float) -> Any:
        """The task's result, a TaskError, or _LIMIT; EOFError/OSError when the worker dies or breaks."""
        self.conn.send((RUN, task, dict(kwargs)))
        return self.conn.recv() if self.conn.poll(timeout_s) else _LIMIT

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ended(self) -> str:
        try:
            code = self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return "its pipe broke"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.conn.close()


def _replace(w: _Worker) -> _Worker:
    w.kill()
    return _Worker()


_fork_lock = threading.Lock()


class WorkerPool:
    """Worker processes for registered tasks: ``call`` blocks, ``await run(...)`` lets other I/O go on,
    ``map`` calls one task on many inputs; each call has ``timeout_s`` unless it says otherwise."""

    def __init__(self, workers: int | None = None, timeout_s: float = 5.0) -> None:
        self.size = workers or os.cpu_count() or 1
        self.timeout_s = timeout_s
        self._closed = False
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        for _ in range(self.size):
            self._idle.put(_Worker())
        self._threads = ThreadPoolExecutor(self.size)

    def _own(self) -> None:
        """In a forked child, start this process's own workers; the inherited ones are the parent's."""
        if self._pid != os.getpid():
            with _fork_lock:
                if self._pid != os.getpid():
                    self._start()

    def _call(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None) -> Any:
        if task not in _tasks:
            raise KeyError(f"no worker task {task!r}; registered: {', '.join(sorted(_tasks)) or 'none'}")
        limit = self.timeout_s if timeout_s is None else timeout_s
        w = self._idle.get()
        why = ""
        try:
            for _ in range(2):
                if not w.alive():  # died while idle; the call was never sent
                    w = _replace(w)
                w.wait_ready()
                w.load(task)
                try:
                    out = w.run(task, kwargs, limit)
                except (EOFError, OSError):  # died or broke on this call: once more, on a fresh worker
                    why = w.ended()
                    w = _replace(w)
                    continue
                if out is _LIMIT:  # hung: replace the worker so the pool goes on
                    w = _replace(w)
                    raise TaskTimedOut(task, limit)
                if isinstance(out, TaskError):  # raised on this input: the worker is fine
                    raise TaskRaised(task, out.kind, out.message)
                return out
            raise WorkerDied(task, why)
        finally:
            self._idle.put(w)

    def call(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None = None) -> Any:
        """``task(**kwargs)`` in a worker, waited for; TaskFailed when it gives no result."""
        self._own()
        return self._call(task, kwargs, timeout_s)

    async def run(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None = None) -> Any:
        """``call`` on one of the pool's threads, so the event loop goes on meanwhile."""
        self._own()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._call, task, kwargs, timeout_s)

    def map(self, task: str, items: Iterable[Mapping[str, Any]], on_failure: Callable[[TaskFailed], R]) -> list[Any]:
        """``task`` on each item (its keyword arguments), every worker busy; a call that gives no result
        is ``on_failure`` of its TaskFailed."""
        self._own()

        def one(kwargs: Mapping[str, Any]) -> Any:
            try:
                return self._call(task, kwargs, None)
            except TaskFailed as e:
                return on_failure(e)

        return list(self._threads.map(one, items))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pid != os.getpid():  # the workers are the parent's: not ours to stop
            return
        self._threads.shutdown(wait=True)
        while not self._idle.empty():
            self._idle.get().kill()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: WorkerPool | None = None
_shared_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _shared, _shared_lock, _fork_lock
    _shared = None  # the parent's; the child's first call starts its own
    _shared_lock, _fork_lock = threading.Lock(), threading.Lock()  # may have been held at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


def shared_pool() -> WorkerPool:
    """A lazily started two-worker pool for single calls (one `verify()`), so they get the limit too."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = WorkerPool(workers=2)
        return _shared
