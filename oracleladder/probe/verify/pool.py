"""Worker processes with a hard wall-clock limit per verification.

concurrent.futures cannot kill one hung task, so each worker is a process we own, fed over a
pipe; a worker past its deadline is killed and replaced, and the item gets NOT_ACCEPT "timeout".
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from oracleladder.schemas.types import Label

from .core import Verdict, exact_match, verify_inprocess

# forkserver: children start from a clean server that has already imported SymPy, so a respawn
# after a kill is fast and never inherits the parent's threads.
_CTX = mp.get_context("forkserver")
_CTX.set_forkserver_preload(["oracleladder.probe.verify.core"])


def _serve(conn: Connection) -> None:
    while True:
        try:
            kwargs = conn.recv()
        except EOFError:
            return
        try:
            conn.send(verify_inprocess(**kwargs))
        except Exception as e:  # a crash on one input is a verdict, not a dead worker
            conn.send(Verdict(Label.NOT_ACCEPT, f"parse error: {type(e).__name__}", None))


class _Worker:
    def __init__(self) -> None:
        self.conn, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def run(self, kwargs: dict[str, Any], timeout_s: float) -> Verdict | None:
        self.conn.send(kwargs)
        if self.conn.poll(timeout_s):
            try:
                return self.conn.recv()
            except EOFError:
                return None
        return None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()


class VerifierPool:
    """A reusable pool: `map` for batches, `await verify(...)` while other I/O is in flight."""

    def __init__(self, workers: int | None = None, timeout_s: float = 5.0) -> None:
        self.size = workers or os.cpu_count() or 1
        self.timeout_s = timeout_s
        self._idle: queue.Queue[_Worker] = queue.Queue()
        for _ in range(self.size):
            self._idle.put(_Worker())
        self._threads = ThreadPoolExecutor(self.size)
        self._closed = False

    def _run(self, kwargs: dict[str, Any]) -> Verdict:
        w = self._idle.get()
        try:
            verdict = w.run(kwargs, self.timeout_s)
        except (BrokenPipeError, OSError):
            verdict = None
        if verdict is None:  # hung or died: replace the worker so the pool goes on
            w.kill()
            w = _Worker()
            verdict = Verdict(Label.NOT_ACCEPT, "timeout", None)
        self._idle.put(w)
        return verdict

    def map(self, items: list[dict[str, Any]]) -> list[Verdict]:
        return list(self._threads.map(self._run, items))

    def verify_sync(self, **kwargs: Any) -> Verdict:
        return self._run(kwargs)

    async def verify(self, response: str, gold: str, **kwargs: Any) -> Verdict:
        if not kwargs.get("schema"):  # an exact answer needs no worker (a schema check would)
            quick = exact_match(response, gold)
            if quick is not None:
                return quick
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._run, dict(response=response, gold=gold, **kwargs))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._threads.shutdown(wait=True)
        while not self._idle.empty():
            self._idle.get().kill()

    def __enter__(self) -> "VerifierPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: VerifierPool | None = None
_shared_lock = threading.Lock()


def shared_pool(timeout_s: float = 5.0) -> VerifierPool:
    """A lazily started two-worker pool for single `verify()` calls, so they get the timeout too."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.timeout_s != timeout_s:
            if _shared is not None:
                _shared.close()
            _shared = VerifierPool(workers=2, timeout_s=timeout_s)
        return _shared
