"""The core of `Experiment`: its store opened and closed, its worker pool, and a client of an endpoint;
the stages' modules extend it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from .. import workers
from ..clients import Client
from ..cluster import Cluster
from ..ladder import (
    CompileDomain,
)
from ..store import DEFAULT_STORE, Store
from ..workers import WorkerPool
from .endpoint import CONCURRENCY, Endpoint, as_endpoint, endpoint_client
from .reader import Reader

D = TypeVar("D", bound=CompileDomain)  # a domain, handed the run's worker pool
E = TypeVar("E", bound="ExperimentCore")


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.absolute().parent, os.W_OK)


class ExperimentCore(Reader):
    """An experiment's store and worker pool (`Experiment` says its arguments)."""

    def __init__(self, store_path: str | os.PathLike[str] = DEFAULT_STORE, *, readonly: bool | None = None,
                 notify: Callable[[str], None] | None = None, workers: int | None = None,
                 cluster: Cluster | None = None) -> None:
        super().__init__()
        self.path = Path(store_path)
        self._readonly = readonly
        self._notify = notify or (lambda _: None)
        self._workers = workers
        self._pool: WorkerPool | None = None
        self.cluster = cluster

    async def __aenter__(self: E) -> E:
        readonly = self._readonly
        if readonly is None:
            readonly = self.path.exists() and not writable(self.path)
        self._store = await Store.open(self.path, readonly=readonly)
        if self.cluster is not None:
            try:
                await asyncio.to_thread(self.cluster.start)  # seconds: Ray's start, each worker up
            except BaseException:
                await self._store.close()
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._pool is not None:
                self._pool.close()
            if self.cluster is not None:
                self.cluster.stop()
        finally:
            if self._store is not None:
                await self._store.close()

    @property
    def pool(self) -> WorkerPool:
        """The worker pool (grading, a plan's checks), started on first use and closed with the experiment;
        on a cluster, its workers' pools."""
        if self._pool is None:
            # read when used: a test may stand one in; a cluster's pool takes a WorkerPool's calls
            self._pool = (cast(WorkerPool, self.cluster.pool) if self.cluster is not None
                          else workers.WorkerPool(self._workers))
        return self._pool

    def _grading(self, domain: D) -> D:
        """``domain``, for a run that grades or checks in worker processes: it runs in the experiment's
        pool, not in one of its own per run."""
        if domain.uses_pool and domain.pool is None:
            domain.pool = self.pool
        return domain

    async def client(self, endpoint: str | Endpoint, *, default_concurrency: int = CONCURRENCY) -> Client:
        """A client of ``endpoint`` caching in the store (endpoint.endpoint_client); the caller closes it."""
        return await endpoint_client(as_endpoint(endpoint), self.store, default_concurrency=default_concurrency,
                                     notify=self._notify, cluster=self.cluster)
