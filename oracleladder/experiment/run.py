"""A run's lifecycle in the store, and the progress display a run may show.

Every stage that works in the store records itself as a run: started with its settings, finished
with its status and its calls' usage, or left "interrupted" when its work raised (Ctrl-C, a
failure). A run that calls a model (`calling`) holds the client of its endpoint for as long."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from ..clients import Client
from ..cluster import Cluster
from ..store import Store
from .endpoint import Endpoint, endpoint_client

INTERRUPTED = "interrupted"
DONE = "done"
BUDGET_STOPPED = "stopped_at_budget"  # a run's status when max_cost stopped it
FINISHED_WITH_FAILURES = "done_with_failures"  # a run's status when some of its work has no result

# A progress display: called with a run's description, its number of jobs and its client (for the
# spend so far); the context it returns is entered for the run, and yields the callback called once
# per finished job.
Progress = Callable[[str, int, Client], AbstractContextManager[Callable[[object], None]]]


@contextmanager
def no_progress(description: str, total: int, client: Client) -> Iterator[Callable[[object], None]]:
    yield lambda _: None


@dataclass
class Run:
    """A run while its work goes on. ``incomplete``: some of the work has no result (the run ends
    done_with_failures; a rerun picks that work up)."""

    id: str
    incomplete: bool = False


@asynccontextmanager
async def recorded(store: Store, kind: str, config: dict[str, Any], client: Client | None = None,
                   ) -> AsyncIterator[Run]:
    """A run of ``kind`` in ``store`` while the block runs, started with ``config`` and ``client``'s
    batches filed under it; finished stopped at the budget (the client's), done with failures (the
    block set ``incomplete``) or done, with the client's usage; "interrupted" when the block raises."""
    run = Run(await store.start_run(kind, config))
    if client is not None:
        client.bind_run(run.id)
    status = INTERRUPTED
    try:
        yield run
        status = (BUDGET_STOPPED if client is not None and client.budget_stop
                  else FINISHED_WITH_FAILURES if run.incomplete else DONE)
    finally:
        await store.finish_run(run.id, status, None if client is None else client.usage)


@asynccontextmanager
async def calling(store: Store, endpoint: Endpoint, kind: str, config: dict[str, Any], *, concurrency: int,
                  notify: Callable[[str], None], cluster: Cluster | None) -> AsyncIterator[tuple[Client, Run]]:
    """A run of ``kind`` that calls ``endpoint``: its client (``concurrency`` calls in flight unless the
    endpoint or its server says; max_cost its budget) made and checked for a batch API, the run
    recorded around the block, the client closed after it. On a ``cluster``, its workers make the calls."""
    async with await endpoint_client(endpoint, store, default_concurrency=concurrency, notify=notify,
                                     cluster=cluster) as client:
        await client.check_batch()
        async with recorded(store, kind, config, client) as run:
            yield client, run
