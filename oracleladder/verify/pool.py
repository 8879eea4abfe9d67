"""Worker processes with a hard wall-clock limit per task, and an honest status when one fails.

concurrent.futures cannot kill one hung task, so each worker is a process we own, fed over a
socket. Workers are `python -m oracleladder.verify._worker`, never a fork or a re-import
of the caller's `__main__`, so any calling context can grade. What can happen to one item:

* the worker answers: that result (a Verdict with status GRADED);
* the item passes its deadline: the worker is killed and replaced, status LIMIT, "timeout";
* the worker dies or breaks on the item (OOM killer, segfault): the item is tried once more on a
  fresh worker, then status UNGRADED, "grading failed: ..." -- never a verdict on the student;
* a worker found dead before the item is sent is replaced silently (the item was never sent);
* workers cannot start at all: VerifierUnavailable is raised, with no verdict.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from oracleladder.schemas.models import Family, FamilyReport, Verdict
from oracleladder.schemas.types import GradeStatus, Label

from .graders import exact_match

READY = "ready"
START_TIMEOUT_S = 120.0  # importing SymPy on a loaded machine; never counted against an item
_ROOT = str(Path(__file__).resolve().parents[3])  # the directory holding this oracleladder
_WORKER = [sys.executable, "-m", "oracleladder.verify._worker"]


class VerifierUnavailable(RuntimeError):
    """The verifier's worker processes cannot start, so nothing can be graded."""


class GradingFailed(RuntimeError):
    """A symbolic check in a worker did not finish (its limit passed, or its worker died)."""


@dataclass(frozen=True)
class TaskError:
    """A task raised in the worker: sent back instead of its result."""

    kind: str
    message: str


@dataclass(frozen=True)
class _NoResult:
    status: GradeStatus  # LIMIT or UNGRADED
    reason: str


_LIMIT = _NoResult(GradeStatus.LIMIT, "timeout")


class _Worker:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen([*_WORKER, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=_ROOT)
        except OSError as e:
            ours.close()
            raise VerifierUnavailable(f"cannot start a verifier worker with {sys.executable!r}: {e}") from e
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        try:
            self.ready = self.conn.poll(START_TIMEOUT_S) and self.conn.recv() == READY
        except (EOFError, OSError):
            pass
        if not self.ready:
            self.kill()
            raise VerifierUnavailable(
                f"a verifier worker did not start ({self.ended()}; its error, if any, is on stderr above); "
                f"check that `{sys.executable} -m oracleladder.verify._worker` can import "
                "oracleladder, SymPy and math-verify, or grade with in_process=True (no time limit)")

    def run(self, task: str, kwargs: dict[str, Any], timeout_s: float) -> Any:
        """The task's result, or _LIMIT; EOFError/OSError when the worker dies or breaks."""
        self.conn.send((task, kwargs))
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


class VerifierPool:
    """A reusable pool: `map` for batches, `await verify(...)` while other I/O is in flight."""

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

    def _call(self, task: str, kwargs: dict[str, Any], timeout_s: float) -> Any:
        w = self._idle.get()
        why = ""
        try:
            for _ in range(2):
                if not w.alive():  # died while idle; the item was never sent
                    w = _replace(w)
                w.wait_ready()
                try:
                    out = w.run(task, kwargs, timeout_s)
                except (EOFError, OSError):  # died or broke on this item: once more, on a fresh worker
                    why = w.ended()
                    w = _replace(w)
                    continue
                if out is _LIMIT:  # hung: replace the worker so the pool goes on
                    w = _replace(w)
                return out
            return _NoResult(GradeStatus.UNGRADED, f"grading failed: the verifier worker died twice ({why})")
        finally:
            self._idle.put(w)

    def _run(self, kwargs: dict[str, Any], timeout_s: float | None = None) -> Verdict:
        out = self._call("verify", kwargs, self.timeout_s if timeout_s is None else timeout_s)
        if isinstance(out, _NoResult):
            return Verdict(Label.NOT_ACCEPT, out.reason, None, out.status)
        if isinstance(out, TaskError):  # a crash on one input is a verdict, not a dead worker
            return Verdict(Label.NOT_ACCEPT, f"parse error: {out.kind}", None)
        return out

    def map(self, items: list[dict[str, Any]]) -> list[Verdict]:
        self._own()
        return list(self._threads.map(self._run, items))

    def verify_sync(self, *, timeout_s: float | None = None, **kwargs: Any) -> Verdict:
        self._own()
        return self._run(kwargs, timeout_s)

    async def verify(self, response: str, gold: str, **kwargs: Any) -> Verdict:
        if not kwargs.get("schema"):  # an exact answer needs no worker (a schema check would)
            quick = exact_match(response, gold)
            if quick is not None:
                return quick
        self._own()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._run, dict(response=response, gold=gold, **kwargs))

    async def check_family(self, family: Family, **kwargs: Any) -> FamilyReport:
        """`validators.check_family` in a worker, with the item limit for each symbolic check it
        may run (schema, leak and prompt leak per milestone, one INTEGRATE); GradingFailed when it
        cannot end."""
        limit = self.timeout_s * (1 + 3 * len(family.tested()))
        self._own()
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(self._threads, self._call, "check_family",
                                         dict(family=family, **kwargs), limit)
        if out is _LIMIT:
            raise GradingFailed(f"the plan's symbolic checks did not finish within {limit:g} s")
        if isinstance(out, _NoResult):
            raise GradingFailed(f"the plan's symbolic checks: {out.reason}")
        if isinstance(out, TaskError):
            raise GradingFailed(f"the plan's symbolic checks raised {out.kind}: {out.message}")
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pid != os.getpid():  # the workers are the parent's: not ours to stop
            return
        self._threads.shutdown(wait=True)
        while not self._idle.empty():
            self._idle.get().kill()

    def __enter__(self) -> "VerifierPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: VerifierPool | None = None
_shared_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _shared, _shared_lock, _fork_lock
    _shared = None  # the parent's; the child's first verify() starts its own
    _shared_lock, _fork_lock = threading.Lock(), threading.Lock()  # may have been held at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


def shared_pool() -> VerifierPool:
    """A lazily started two-worker pool for single `verify()` calls, so they get the limit too."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = VerifierPool(workers=2)
        return _shared
