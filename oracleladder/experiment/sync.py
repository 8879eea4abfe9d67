"""`SyncExperiment`: an Experiment whose methods block, for a script or a notebook cell alike."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import Future
from typing import Any

from ..store import DEFAULT_STORE
from .stages import Experiment


class SyncExperiment:
    """An Experiment whose methods block: ``ex.probe(...)`` returns the probe's result.

    Every call runs on the experiment's own event loop, in a worker thread that lives as long as the
    experiment: the store and its writer stay on one loop, and a call made where a loop already runs
    (a Jupyter cell, a coroutine) neither nests loops nor blocks on its own loop. Use it as
    ``with SyncExperiment(path) as ex:``, or call close()."""

    def __init__(self, store_path: str | os.PathLike[str] = DEFAULT_STORE, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="oracleladder-experiment", daemon=True)
        self._thread.start()
        self._experiment = Experiment(store_path, **options)
        try:
            self._call(self._experiment.__aenter__())
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Any) -> Any:
        ended = threading.Event()

        async def guarded() -> Any:
            try:
                return await coro
            finally:
                ended.set()

        future: Future = asyncio.run_coroutine_threadsafe(guarded(), self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:  # stop the call, and wait for its cleanup (finish_run, aclose) to end
            future.cancel()
            ended.wait()
            raise

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._experiment, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr
        return lambda *args, **kwargs: self._call(attr(*args, **kwargs))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._experiment.__aexit__(None, None, None))
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncExperiment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
