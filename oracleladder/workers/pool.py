"""Worker processes with a hard CPU-time limit per task, and an honest failure when one breaks.

concurrent.futures cannot kill one hung task, so each worker is a process we own, fed over a
socket. Workers are `python -m oracleladder.workers._worker`, never a fork or a re-import of the
caller's `__main__`, so any calling context can use them. A task is a function known by name: the
layer that owns it registers it (`register_task("verify", "oracleladder.verify.core:verify_inprocess")`),
and a worker imports it when it starts (or, for a task registered later, before its first call), so
an import never counts against a task's limit. A call's limit counts the worker's CPU time (the
kernel ends the worker when the call passes it), so a loaded machine that gives a worker a tenth of
a core neither turns a slow call into a timeout nor decides a verdict; a wall-clock backstop,
WALL_PER_CPU times the limit, ends a call that waits without computing. What can happen to one call:

* the worker answers: that result;
* the call passes its CPU limit, or its wall-clock backstop: the worker is killed and replaced, TaskTimedOut;
* the task raises in the worker: TaskRaised (kind and message), the worker goes on;
* the worker dies or breaks on the call (OOM killer, segfault): the call is tried once more on a
  fresh worker, then WorkerDied -- a failure, never an answer;
* a worker found dead before the call is sent is replaced silently (the call was never sent);
* the calls sent with it (a batch) that it had not started when it was killed or died: sent again
  to the fresh worker, unharmed;
* workers cannot start, or cannot import the task: WorkersUnavailable.

A pool belongs to the process that made it: after `os.fork` the child starts its own workers
and never reads the parent's sockets (they would deliver the parent's answers).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

READY = "ready"
LOAD, RUN = "load", "run"  # what the pool asks of a worker: import a task, or call it
BATCH = 8  # calls sent to a worker at once, so it never waits on the pool's thread between them
WALL_PER_CPU = 10.0  # a call's wall-clock backstop, per second of its CPU limit: a tenth of a core (load 20 on 2)
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
    """A call in a worker gave no result. Pickled with its own arguments, so a failure crosses to
    another process (a cluster's actor to its driver) as itself."""

    _args: tuple[Any, ...] = ()  # a subclass's own arguments, where they are not its message

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._args or self.args


class TaskTimedOut(TaskFailed):
    def __init__(self, task: str, limit_s: float) -> None:
        super().__init__(f"{task}: no result within {limit_s:g} s of CPU")
        self.limit_s, self._args = limit_s, (task, limit_s)


class WorkerDied(TaskFailed):
    def __init__(self, task: str, why: str) -> None:
        super().__init__(f"{task}: the worker died twice ({why})")
        self.why = why  # how the second worker ended: "killed by signal 9", "exit code 1", ...
        self._args = (task, why)


class TaskRaised(TaskFailed):
    def __init__(self, task: str, kind: str, message: str) -> None:
        super().__init__(f"{task} raised {kind}: {message}")
        self.kind, self.message, self._args = kind, message, (task, kind, message)


@dataclass(frozen=True)
class TaskError:
    """What a worker sends back instead of a result when the task raised."""

    kind: str
    message: str


_LIMIT = object()  # a call's limit passed


@dataclass(eq=False)
class _Call:
    task: str
    kwargs: dict[str, Any]
    limit: float
    future: Future[Any]
    died: str = ""  # how the first worker that died on it ended


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

    def send(self, calls: Iterable[_Call]) -> None:
        """The calls, in one message; the worker answers each in turn. OSError when it broke."""
        self.conn.send((RUN, [(c.task, c.kwargs, c.limit) for c in calls]))

    def result(self, limit_s: float) -> Any:
        """The next call's result, a TaskError, or _LIMIT (its CPU limit or its wall-clock backstop
        passed); EOFError/OSError when the worker dies or breaks."""
        if not self.conn.poll(limit_s * WALL_PER_CPU):
            return _LIMIT
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            if self.code() == -signal.SIGPROF:  # the kernel ended it at the call's CPU limit
                return _LIMIT
            raise

    def alive(self) -> bool:
        return self.proc.poll() is None

    def code(self) -> int | None:
        """Its exit code (a signal's, negative), or None if it has not ended within a second."""
        try:
            return self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return None

    def ended(self) -> str:
        code = self.code()
        if code is None:
            return "its pipe broke"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.conn.close()


def _replace(w: _Worker) -> _Worker:
    w.kill()
    return _Worker()


def _fail(calls: Iterable[_Call], e: BaseException) -> None:
    for c in calls:
        c.future.set_exception(e)


def _serve(w: _Worker, calls: Iterable[_Call]) -> _Worker:
    """Each call's outcome on its future, the calls sent to ``w`` together; the worker that serves the
    next ones (``w``, or the fresh one that replaced it). A call the worker had not started when it
    was killed or died is sent again, unharmed: only the call it was on pays."""
    pending = deque(calls)
    while pending:
        if not w.alive():  # died while idle, or killed on the call before: the rest were never run
            w = _replace(w)
        try:
            w.wait_ready()
        except WorkersUnavailable as e:
            _fail(pending, e)
            break
        for task in sorted({c.task for c in pending}):
            try:
                w.load(task)
            except WorkersUnavailable as e:
                _fail((c for c in pending if c.task == task), e)
                pending = deque(c for c in pending if c.task != task)
        if not pending or not w.alive():
            continue
        try:
            w.send(pending)
        except OSError:
            pass  # the worker broke: the first call's result reads EOFError below
        while pending:
            c = pending[0]
            try:
                out = w.result(c.limit)  # its backstop starts when the call before it ends
            except (EOFError, OSError):  # died or broke on this call: once more, on a fresh worker
                why = w.ended()
                w = _replace(w)
                if c.died:
                    _fail([pending.popleft()], WorkerDied(c.task, why))
                else:
                    c.died = why
                break
            if out is _LIMIT:  # hung: replace the worker so the pool goes on
                w = _replace(w)
                _fail([pending.popleft()], TaskTimedOut(c.task, c.limit))
                break
            pending.popleft()
            if isinstance(out, TaskError):  # raised on this input: the worker is fine
                c.future.set_exception(TaskRaised(c.task, out.kind, out.message))
            else:
                c.future.set_result(out)
    return w


class _Slot:
    """One worker, the calls waiting for it, and the thread that feeds it."""

    def __init__(self) -> None:
        self.worker = _Worker()
        self.queue: deque[_Call] = deque()


_fork_lock = threading.Lock()


class WorkerPool:
    """Worker processes for registered tasks: ``call`` blocks, ``await run(...)`` lets other I/O go on,
    ``map`` calls one task on many inputs; each call has ``timeout_s`` unless it says otherwise.

    Calls with the same ``affinity`` (the verifier's: the gold) go to the same worker while it keeps
    up, so its caches (the gold's parse, the parser's tables for that problem's answers) serve them
    all; a worker with nothing of its own takes another's calls that wait beyond its next batch. A
    worker is sent up to BATCH waiting calls at once and starts each as it ends the one before, every
    call with its own limit."""

    def __init__(self, workers: int | None = None, timeout_s: float = 5.0) -> None:
        self.size = workers or os.cpu_count() or 1
        self.timeout_s = timeout_s
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._closed = False
        self._cv = threading.Condition()
        self._homes: dict[Hashable, _Slot] = {}  # each affinity's worker, given by turns
        self._slots = [_Slot() for _ in range(self.size)]
        self._threads = [threading.Thread(target=self._feed, args=(slot,), daemon=True) for slot in self._slots]
        for t in self._threads:
            t.start()

    def _own(self) -> None:
        """In a forked child, start this process's own workers; the inherited ones are the parent's."""
        if self._pid != os.getpid():
            with _fork_lock:
                if self._pid != os.getpid():
                    self._start()

    def _feed(self, slot: _Slot) -> None:
        while True:
            with self._cv:
                while not (slot.queue or self._closed or self._longest() > BATCH):
                    self._cv.wait()
                # another's calls past the batch it is sent next wait for a while: this worker takes
                # them one at a time (its own worker's caches would serve them best)
                source = slot.queue or max((s.queue for s in self._slots), key=len)
                if not source:  # closed, and every call served
                    return
                batch = [source.popleft() for _ in range(min(BATCH if source is slot.queue else 1, len(source)))]
            calls = [c for c in batch if c.future.set_running_or_notify_cancel()]  # an awaiter may have gone
            try:
                slot.worker = _serve(slot.worker, calls)
            except WorkersUnavailable as e:  # a replacement could not start: no call may wait forever
                _fail((c for c in calls if not c.future.done()), e)

    def pids(self) -> list[int]:
        """Its workers' process ids as they are now (to read what they cost: bench/scale.py)."""
        return [slot.worker.proc.pid for slot in self._slots]

    def _longest(self) -> int:
        return max(len(s.queue) for s in self._slots)

    def _submit(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None, affinity: Hashable) -> Future[Any]:
        if task not in _tasks:
            raise KeyError(f"no worker task {task!r}; registered: {', '.join(sorted(_tasks)) or 'none'}")
        self._own()
        call = _Call(task, dict(kwargs), self.timeout_s if timeout_s is None else timeout_s, Future())
        with self._cv:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if affinity is None:
                slot = min(self._slots, key=lambda s: len(s.queue))
            else:
                slot = self._homes.setdefault(affinity, self._slots[len(self._homes) % self.size])
            slot.queue.append(call)
            self._cv.notify_all()
        return call.future

    def call(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None = None,
             affinity: Hashable = None) -> Any:
        """``task(**kwargs)`` in a worker, waited for; TaskFailed when it gives no result."""
        return self._submit(task, kwargs, timeout_s, affinity).result()

    async def run(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None = None,
                  affinity: Hashable = None) -> Any:
        """``call``, awaited: the event loop goes on meanwhile."""
        return await asyncio.wrap_future(self._submit(task, kwargs, timeout_s, affinity))

    def map(self, task: str, items: Iterable[Mapping[str, Any]], on_failure: Callable[[TaskFailed], R],
            affinity: Callable[[Mapping[str, Any]], Hashable] | None = None) -> list[Any]:
        """``task`` on each item (its keyword arguments), every worker busy; a call that gives no result
        is ``on_failure`` of its TaskFailed. ``affinity`` gives each item's (see the class)."""
        futures = [self._submit(task, item, None, affinity and affinity(item)) for item in items]
        out: list[Any] = []
        for future in futures:
            try:
                out.append(future.result())
            except TaskFailed as e:
                out.append(on_failure(e))
        return out

    def close(self) -> None:
        """Serve the calls already made, then stop the workers."""
        if self._pid != os.getpid():  # the workers are the parent's: not ours to stop
            self._closed = True
            return
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify_all()
        for t in self._threads:
            t.join()
        for slot in self._slots:
            slot.worker.kill()

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
