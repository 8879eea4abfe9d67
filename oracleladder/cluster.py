"""A run spread over a Ray cluster (`--ray ADDRESS`, ``Experiment(cluster=Cluster(...))``; docs/cluster.md).

A `Cluster` holds N Ray actors (`--workers`, default one per node), each a process on its node with
the toolkit's own provider of each endpoint (so a `--base-url` of localhost is its own node's server)
and a verifier pool of its node's cores. The driver keeps all the rest: its Client (the store's
cache, the calls in flight shared, retries, usage, cost and `--max-cost`) sees each worker as one
replica of the endpoint (`RemoteProvider`), and its domain grades through the workers (`RemotePool`).
Answers and verdicts come back to the driver, which alone writes the store. A worker that dies fails
only its calls in flight: the client asks them again (a ConnectionDropped, retried on another worker
while Ray restarts that one); an answered call is stored, and never asked again.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_module
from .clients import ChatRequest, ChatResult
from .clients.base import Provider
from .clients.errors import ConnectionDropped
from .clients.providers import endpoint_of, make_provider
from .workers import WorkerDied, WorkerPool, register_task, registered

if TYPE_CHECKING:
    import ray
else:  # an optional extra: loaded by a run on a cluster only
    ray = lazy_module("ray")

LOCAL = "local"  # --ray local: a Ray cluster started on this machine
INSTALL = "--ray needs Ray, an optional extra: pip install 'oracleladder[ray]'"


class ClusterError(Exception):
    """A cluster that cannot be used (Ray not installed, an address that does not answer): one line."""


@dataclass(frozen=True)
class Wire:
    """What a worker needs to make an endpoint's provider on its own node (its key read there)."""

    provider: str
    base_urls: tuple[str | None, ...]
    api_key_env: str | None
    timeout: float

    def url(self, worker: int) -> str | None:
        """The server worker ``worker`` asks: the endpoint's replicas spread over the workers."""
        return self.base_urls[worker % len(self.base_urls)]


class Worker:
    """One Ray actor (restarted by Ray with the same arguments when its process dies)."""

    def __init__(self, index: int, tasks: Mapping[str, str], pool_size: int) -> None:
        for name, target in tasks.items():  # the verifier's and the validators' tasks, as the driver has them
            register_task(name, target)
        self.index = index
        self.pool = WorkerPool(pool_size)
        self.providers: dict[Wire, Provider] = {}

    def _provider(self, wire: Wire) -> Provider:
        if wire not in self.providers:
            self.providers[wire] = make_provider(wire.provider, api_key_env=wire.api_key_env,
                                                 base_url=wire.url(self.index), timeout=wire.timeout)
        return self.providers[wire]

    async def complete(self, wire: Wire, request: ChatRequest) -> ChatResult:
        return await self._provider(wire).complete(request)

    async def served_models(self, wire: Wire) -> list[str]:
        served = getattr(self._provider(wire), "served_models", None)
        return await served() if served is not None else []

    async def run(self, task: str, kwargs: Mapping[str, Any], timeout_s: float, affinity: Hashable = None) -> Any:
        return await self.pool.run(task, kwargs, timeout_s, affinity)

    def pid(self) -> int:
        return os.getpid()


async def _remote(call: Any) -> Any:
    """The result of an actor call, or the exception it raised as itself (not wrapped by Ray)."""
    try:
        return await call
    except ray.exceptions.RayTaskError as exc:
        raise exc.cause from None


class RemoteProvider:
    """One worker as one replica of an endpoint (a Provider): its calls are asked on the worker's node."""

    def __init__(self, actor: Any, index: int, wire: Wire) -> None:
        self._actor, self._wire = actor, wire
        self.name = wire.provider
        self.endpoint = endpoint_of(wire.provider, wire.url(index))  # a call's key as a plain run's
        self.base_url = f"ray worker {index} ({wire.url(index) or wire.provider})"

    async def complete(self, request: ChatRequest) -> ChatResult:
        try:
            return await _remote(self._actor.complete.remote(self._wire, request))
        except ray.exceptions.RayActorError as exc:  # its process died: asked again, on another worker
            raise ConnectionDropped(f"{self.base_url} lost: {str(exc).splitlines()[0]}") from None

    async def served_models(self) -> list[str]:
        return await _remote(self._actor.served_models.remote(self._wire))

    async def aclose(self) -> None:
        return None


class RemotePool:
    """The grading of a run on a cluster: each task in a worker's verifier pool, the workers by turns;
    a task whose worker died goes to the next (a task is pure: run again, it gives the same)."""

    def __init__(self, actors: Sequence[Any], timeout_s: float = 5.0) -> None:
        self._actors = actors
        self._turns: Iterator[Any] = itertools.cycle(actors)
        self.size = len(actors)
        self.timeout_s = timeout_s

    async def run(self, task: str, kwargs: Mapping[str, Any], timeout_s: float | None = None,
                  affinity: Hashable = None) -> Any:
        """``task`` in a worker's pool (``affinity``: within that pool, see WorkerPool)."""
        why = ""
        for _ in range(len(self._actors) + 1):
            try:
                return await _remote(next(self._turns).run.remote(task, kwargs, timeout_s or self.timeout_s, affinity))
            except ray.exceptions.RayActorError as exc:
                why = str(exc).splitlines()[0]
        raise WorkerDied(task, why)

    def close(self) -> None:
        return None


class Cluster:
    """``address``: "local" starts a Ray cluster on this machine, "auto" joins the one this machine is
    in, "ray://HOST:PORT" one elsewhere. ``workers``: the actors (default one per node). Started by
    the Experiment it is given to, and stopped with it."""

    def __init__(self, address: str = LOCAL, *, workers: int | None = None, num_cpus: int | None = None) -> None:
        try:
            ray.__version__  # noqa: B018 - imported now: a missing Ray is said before any store is opened
        except ModuleNotFoundError:
            raise ClusterError(INSTALL) from None
        self.address = address
        self.workers = workers
        self._num_cpus = num_cpus  # a local cluster's CPUs (default: the machine's)
        self._actors: list[Any] = []

    def start(self) -> None:
        try:
            ray.init(address=None if self.address == LOCAL else self.address, include_dashboard=False,
                     num_cpus=self._num_cpus if self.address == LOCAL else None, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(f"--ray {self.address}: {str(exc).splitlines()[0]}") from None
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        n = self.workers or len(nodes)
        # each worker grades with its share of its node's cores
        pool_size = max(1, int(sum(node["Resources"].get("CPU", 1) for node in nodes)) // n)
        actor = ray.remote(Worker).options(max_restarts=-1, max_task_retries=0, num_cpus=0,
                                           scheduling_strategy="SPREAD")
        self._actors = [actor.remote(i, registered(), pool_size) for i in range(n)]
        ray.get([a.pid.remote() for a in self._actors])  # each up, or its failure now
        self.pool = RemotePool(self._actors)

    def stop(self) -> None:
        for a in self._actors:
            ray.kill(a)
        self._actors = []
        ray.shutdown()

    def providers(self, wire: Wire) -> list[Provider]:
        """The endpoint of ``wire`` asked by each worker: one replica each."""
        return [RemoteProvider(a, i, wire) for i, a in enumerate(self._actors)]

    def pids(self) -> list[int]:
        """The process ids of the workers (a test kills one)."""
        return ray.get([a.pid.remote() for a in self._actors])
