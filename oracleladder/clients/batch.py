"""Batch mode (``--batch``): calls answered through OpenAI's Batch API, Anthropic's Message Batches or
Gemini's batch mode, at the batch price, by a provider that sits below the Client's cache, retries,
usage and structured path, so a batch answer lands in the same call cache as an online one.

``BatchProvider.complete`` queues its request and waits. Once no new request has come for ``quiet``
seconds and no task a batch answered is still at work on its answer (``rounds``: all first attempts
of a compile, then all its re-asks; all jobs of a probe), the queue goes out as batches within the
provider's limits; each row's custom_id is the call key. Before a batch is created, its intent (its
custom_ids under a provisional id, state ``creating``) is in the store; the provider's id replaces the
provisional one the moment the provider returns it. A create whose reply is lost (a timeout, a
dropped connection, a 5xx) may have made the batch: it is looked up (``BatchAPI.find``) and watched
if found, its calls submitted again only once the provider's list, consistent by then, has no such
batch; a refusal (a 4xx) made none. A later run asking a call held by a stored batch reads that batch
(polling it while it runs; an intent is looked up first) instead of submitting the call again. A
batch is polled at an interval that backs off; once it has ended, its rows answer their calls in any order.
A row that errored (transiently), expired or was cancelled goes into the next batch, at most ``rounds``
batches in all; then its call fails for good, as an online call whose retries are spent.

A results file is read row by row (`batch_results`): a line that cannot be read (cut short, not JSON, no custom_id)
leaves its call without a row, and a call with rows that disagree is without an answer; either goes
into the next batch, said in a warning. A completed batch whose results hold no row at all is an
error of the provider: its calls fail, said, and are not submitted again in this run. A batch not
ended ``deadline`` seconds after its creation is cancelled; its rows without an answer go into the
next batch (once the cancel has ended it, or when it has not ended as long again, 10 minutes at most).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from ..store.batches import CREATING, RESULTS_EMPTY, SUBMITTED, BatchRecord
from ..store.rows import now
from .base import ChatRequest, ChatResult
from .batch_api import COMPLETED, ENDED, BatchAPI, CreateLost, Outcome, RowRefused
from .batch_results import outcomes, read_rows
from .errors import Arg, ConfigurationError, PermanentError, ProviderError, ServerError, TransientError
from .providers import DEFAULT_TIMEOUT_S, make_batch_api, parse_model
from .rounds import Rounds
from .runner import Client

log = logging.getLogger(__name__)
BATCH_SLOTS = 10_000_000  # a batch client's concurrency: every call of a run may wait in a batch at once
DEFAULT_QUIET_S = 2.0
DEFAULT_HOLD_S = 120.0  # the longest a queue waits on tasks at work (one stuck must not stall the rest)
DEFAULT_POLL_S = 5.0
DEFAULT_MAX_POLL_S = 300.0
DEFAULT_ROUNDS = 3
MAX_POLL_FAILURES = 10  # polls in a row that fail before the calls waiting on the batch fail
INTENT_PREFIX = "intent-"  # a provisional id: the batch's intent, stored before its create call
DEADLINE_MARGIN_S = 3600.0  # the default deadline: the provider's completion window and this
CANCEL_GRACE_S = 600.0  # the longest a batch cancelled at its deadline is waited on to end


class BatchRowFailed(PermanentError):
    """A call whose batch rows failed in every round: no answer, as an online call whose retries are spent."""


class BatchResultsEmpty(PermanentError):
    """A call of a completed batch whose results hold no row at all: an error of the provider."""


class BatchLog(Protocol):
    """The slice of ``oracleladder.store.Store`` batch mode needs (its ``batches`` table)."""

    async def put_batch(self, b: BatchRecord) -> None: ...

    async def update_batch(self, batch_id: str, state: str, succeeded: int, failed: int) -> None: ...

    async def adopt_batch(self, intent: str, batch_id: str) -> None: ...

    async def delete_batch(self, batch_id: str) -> None: ...

    async def batches(self, provider: str | None = None, endpoint: str | None = None, *,
                      any_endpoint: bool = True) -> list[BatchRecord]: ...


@dataclass
class BatchView:
    """One batch as the progress display shows it."""

    id: str
    state: str
    requests: int
    succeeded: int = 0  # rows the provider says it answered
    failed: int = 0  # rows the provider says failed
    settled: int = 0  # rows whose outcome this run has read


@dataclass
class _Waiter:
    request: ChatRequest
    future: asyncio.Future[ChatResult]
    task: asyncio.Task[Any] | None  # the task that asked
    rounds: int = 0  # batches this call was in


class BatchProvider:
    """A Provider answering each call through the batch API ``api`` (see the module's docstring)."""

    batch = True  # the Client prices its calls at the batch rate

    def __init__(self, api: BatchAPI, *, model: str, log_store: BatchLog | None = None, quiet: float = DEFAULT_QUIET_S,
                 poll: float = DEFAULT_POLL_S, max_poll: float = DEFAULT_MAX_POLL_S, rounds: int = DEFAULT_ROUNDS,
                 hold: float = DEFAULT_HOLD_S, on_status: Callable[[BatchView], None] | None = None,
                 round_state: Rounds | None = None, deadline: float | None = None) -> None:
        self.api = api
        self.name = api.name
        self.endpoint = api.endpoint
        self.model = model
        self.store = log_store
        self.quiet, self.poll, self.max_poll, self.rounds = quiet, poll, max_poll, max(1, rounds)
        self.hold = hold
        # seconds from a batch's creation after which it is cancelled (default: the provider's window and a margin)
        self.deadline = api.window + DEADLINE_MARGIN_S if deadline is None else deadline
        self.on_status = on_status  # told each change of a batch (the progress display)
        self.round_state = round_state or Rounds()  # which tasks its answers woke are at work
        self.run_id: str | None = None
        self.submitted = 0  # rows this process submitted
        self._waiting: dict[str, _Waiter] = {}  # call key -> its caller, until answered
        self._queue: dict[str, _Waiter] = {}  # to submit
        self._queued_bytes = 0
        self._attached: dict[str, set[str]] = {}  # stored batch id -> keys waiting on it, not yet watched
        # call key -> the newest batch holding it whose row has not answered it: a call asked again
        # (a retry after a failed read, a rerun) reads that batch, never submits it again
        self._stored: dict[str, str] = {}
        self._loaded = False  # _stored read from the store
        self._intents: dict[str, BatchRecord] = {}  # provisional id -> a batch whose create reply is unknown
        self._known: set[str] = set()  # the provider's ids of the stored batches
        self._created: dict[str, str] = {}  # batch id (or provisional id) -> when it was stored (its deadline's start)
        self._resolving: dict[str, asyncio.Future[str | None]] = {}  # provisional id -> its lookup
        self._last = 0.0  # when the last call came
        self._flusher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def complete(self, request: ChatRequest) -> ChatResult:
        key = request.key()
        if not self._loaded:
            await self._load()
        w = _Waiter(request, asyncio.get_running_loop().create_future(), asyncio.current_task())
        self.round_state.waiting()
        self._waiting[key] = w
        stored = self._stored.get(key)
        if stored is not None:  # in a batch (or an intent) already: read that batch, never submit it again
            w.rounds = 1
            self._attached.setdefault(stored, set()).add(key)
        else:
            self._enqueue(key, w)
        self._last = time.monotonic()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_loop())
        try:
            return await w.future
        finally:
            self._waiting.pop(key, None)

    async def _load(self) -> None:
        stored: dict[str, str] = {}
        if self.store is not None:
            for b in await self.store.batches(self.name, self.endpoint, any_endpoint=False):
                if b.state == RESULTS_EMPTY:  # said once; its calls go in a new batch
                    continue
                stored.update(dict.fromkeys(b.custom_ids, b.id))  # oldest first: the newest wins
                self._created[b.id] = b.created_at
                if b.state == CREATING:
                    self._intents[b.id] = b
                else:
                    self._known.add(b.id)
        self._stored, self._loaded = stored, True

    def _enqueue(self, key: str, w: _Waiter) -> None:
        self._queue[key] = w
        self._queued_bytes += len(json.dumps(self.api.entry(key, w.request)))

    async def _flush_loop(self) -> None:
        """Submit the queue, and start watching the stored batches calls wait on, once no call has
        come for ``quiet`` seconds and no task a batch answered is at work (or the queue fills a batch)."""
        while self._queue or self._attached:
            idle = time.monotonic() - self._last
            full = len(self._queue) >= self.api.max_requests or self._queued_bytes >= self.api.max_bytes
            if not full and idle < self.quiet:
                await asyncio.sleep(self.quiet - idle)
                continue
            if not full and idle < self.hold and self.round_state.working():  # the round's last calls are coming
                await asyncio.sleep(max(self.quiet / 4, 0.01))
                continue
            for batch_id, keys in self._attached.items():
                self._spawn(self._watch(batch_id, keys))
            self._attached = {}
            queue, self._queue, self._queued_bytes = self._queue, {}, 0
            for chunk in self._chunks(queue):
                await self._submit(chunk)

    def _chunks(self, queue: dict[str, _Waiter]) -> list[dict[str, tuple[_Waiter, dict[str, Any]]]]:
        chunks: list[dict[str, tuple[_Waiter, dict[str, Any]]]] = [{}]
        size = 0
        for key, w in queue.items():
            entry = self.api.entry(key, w.request)
            n = len(json.dumps(entry, ensure_ascii=False).encode()) + 1
            if chunks[-1] and (len(chunks[-1]) >= self.api.max_requests or size + n > self.api.max_bytes):
                chunks.append({})
                size = 0
            chunks[-1][key] = (w, entry)
            size += n
        return [c for c in chunks if c]

    async def _submit(self, chunk: dict[str, tuple[_Waiter, dict[str, Any]]]) -> None:
        t = now()
        intent = BatchRecord(id=f"{INTENT_PREFIX}{uuid.uuid4().hex}", provider=self.name, endpoint=self.endpoint,
                             model=self.model, state=CREATING, requests=len(chunk), custom_ids=list(chunk),
                             run_id=self.run_id, created_at=t, updated_at=t)
        try:  # first: a run killed from here on looks the batch up, never submits it again
            if self.store is not None:
                await self.store.put_batch(intent)
        except Exception as e:  # an intent the store cannot record: its calls fail with why (the run stops)
            for w, _ in chunk.values():
                self._fail(w, e)
            return
        self._intents[intent.id] = intent
        self._created[intent.id] = intent.created_at
        for key, (w, _) in chunk.items():
            w.rounds += 1
            self._stored[key] = intent.id
        try:
            batch_id = await self.api.submit([entry for _, entry in chunk.values()], intent.id)
            await self._adopt(intent, batch_id)
        except CreateLost as e:
            log.warning("%s: %s (looking the batch up)", self.name, e)
            try:
                found = await self._resolved(intent)
            except Exception as e:  # not now: the calls fail (asked again, they look it up again)
                for w, _ in chunk.values():
                    self._fail(w, e)
                return
            if found is None:  # none was made: the calls go in the next batch
                self._none_made(intent, set(chunk))
                return
            batch_id = found
        except ProviderError as e:  # refused: no batch was made, each call fails as an online one would
            try:
                await self._forget(intent)
            finally:
                for key, (w, _) in chunk.items():
                    self._stored.pop(key, None)
                    self._fail(w, e)
            return
        except Exception as e:  # an id the store cannot record: its calls fail with why (the run stops; the
            for w, _ in chunk.values():  # intent stays, and a rerun looks the batch up)
                self._fail(w, e)
            return
        self.submitted += len(chunk)
        self._spawn(self._watch(batch_id, set(chunk)))

    async def _adopt(self, intent: BatchRecord, batch_id: str) -> None:
        """``batch_id`` is the batch created for ``intent``: stored under that id, its calls read it."""
        self._known.add(batch_id)
        self._created[batch_id] = intent.created_at
        if self.store is not None:
            await self.store.adopt_batch(intent.id, batch_id)
        for key in intent.custom_ids:
            if self._stored.get(key) == intent.id:
                self._stored[key] = batch_id

    async def _forget(self, intent: BatchRecord) -> None:
        """No batch was made for ``intent``: it leaves the store (a call of it asked again goes in a batch)."""
        if self.store is not None:
            await self.store.delete_batch(intent.id)

    async def _resolved(self, intent: BatchRecord) -> str | None:
        """The id of the batch created for ``intent``, or None if none was: looked up once for all
        who ask (again if the lookup failed)."""
        if intent.id not in self._resolving:
            self._resolving[intent.id] = asyncio.ensure_future(self._resolve(intent))
        try:
            return await self._resolving[intent.id]
        except Exception:
            self._resolving.pop(intent.id, None)
            raise

    async def _resolve(self, intent: BatchRecord) -> str | None:
        """Look the batch of ``intent`` up in the provider's list until found (then adopted) or until
        the list, ``list_lag`` seconds on, is consistent (then forgotten)."""
        at = datetime.fromisoformat(intent.created_at)
        settled = time.monotonic() + self.api.list_lag
        delay, failures = self.poll, 0
        while True:
            try:
                found = await self.api.find(intent.id, intent.requests, at, self._known)
            except TransientError as e:  # a list that failed says nothing of the batch: list again
                failures += 1
                if failures > MAX_POLL_FAILURES:
                    raise
                log.warning("%s: looking up the batch of %s: %s (again)", self.name, intent.id, e)
            else:
                if found is not None:
                    log.warning("%s: the batch of %s is %s", self.name, intent.id, found)
                    await self._adopt(intent, found)
                    return found
                if time.monotonic() >= settled:
                    log.warning("%s: no batch was made for %s: its calls go again", self.name, intent.id)
                    await self._forget(intent)
                    return None
            await asyncio.sleep(min(delay, max(settled - time.monotonic(), 0.0)))
            delay = min(delay * 1.5, self.max_poll)

    def _none_made(self, intent: BatchRecord, keys: set[str]) -> None:
        """The calls ``keys`` of ``intent``, for which no batch was made, go in the next batch."""
        for key in keys:  # as rows without an answer
            self._settle(key, ServerError(f"{self.name}: no batch was made for {intent.id}"), intent.id)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _watch(self, batch_id: str, keys: set[str]) -> None:
        """Poll a batch (an intent: once looked up), backing off, until it ends (cancelled at its
        deadline); then answer its calls from its rows."""
        view = BatchView(batch_id, SUBMITTED, len(keys))
        delay, failures, cancelled = self.poll, 0, False
        try:
            if batch_id in self._intents:
                intent = self._intents[batch_id]
                found = await self._resolved(intent)
                if found is None:
                    self._none_made(intent, keys)
                    return
                view.id = batch_id = found
            self._show(view)
            while True:
                try:
                    st = await self.api.status(batch_id)
                except TransientError as e:  # a poll that failed says nothing of the batch: poll again
                    failures += 1
                    if failures > MAX_POLL_FAILURES:
                        raise
                    log.warning("%s batch %s: %s (polling again)", self.name, batch_id, e)
                else:
                    failures = 0
                    if (st.state, st.succeeded, st.failed) != (view.state, view.succeeded, view.failed):
                        view.state, view.succeeded, view.failed = st.state, st.succeeded, st.failed
                        if self.store is not None:
                            await self.store.update_batch(batch_id, st.state, st.succeeded, st.failed)
                        self._show(view)
                    if st.state in ENDED:
                        break
                late = self._age(batch_id) - self.deadline
                if late >= 0 and not cancelled:
                    cancelled = True
                    await self._cancel(batch_id)
                elif late > min(self.deadline, CANCEL_GRACE_S):  # the cancel did not end it either
                    for key in keys:
                        self._settle(key, ServerError(f"{self.name} batch {batch_id} did not end by its deadline "
                                                      f"(--batch-deadline {self.deadline:g} s)"), batch_id)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.max_poll)
            await self._read(batch_id, keys, view)
            self._show(view)
        except ProviderError as e:
            for key in keys:
                if e.status == 404:  # the provider has no such batch (any more): its calls go again
                    self._settle(key, ServerError(f"{self.name} batch {batch_id} is gone: {e}"), batch_id)
                elif key in self._waiting:  # it cannot be read now (a refused key, an outage): its calls fail
                    self._fail(self._waiting[key], e)  # (asked again, a call reads this batch again)
        except Exception as e:  # a bug or a store failure: the calls fail with it, never wait forever
            for key in keys:
                if key in self._waiting:
                    self._fail(self._waiting[key], e)

    def _age(self, batch_id: str) -> float:
        """Seconds since ``batch_id`` was stored."""
        return (datetime.now(timezone.utc) - datetime.fromisoformat(self._created[batch_id])).total_seconds()

    async def _cancel(self, batch_id: str) -> None:
        log.warning("%s batch %s has not ended %g s after its creation (--batch-deadline): cancelling it; its "
                    "rows without an answer go again", self.name, batch_id, self.deadline)
        try:
            await self.api.cancel(batch_id)
        except ProviderError as e:  # then it is waited on as long again, and left
            log.warning("%s batch %s: the cancel failed: %s", self.name, batch_id, e)

    async def _read(self, batch_id: str, keys: set[str], view: BatchView) -> None:
        """Settle the calls ``keys`` from the rows of an ended batch (`batch_results`)."""
        rows = await read_rows(self.api, batch_id, keys, poll=self.poll, max_poll=self.max_poll)
        if not rows.count and view.state in COMPLETED:
            await self._results_empty(batch_id, keys, view)
            return
        for key, outcome in outcomes(self.name, batch_id, view.state, keys, rows).items():
            self._settle(key, outcome, batch_id)
        view.settled = len(keys)

    async def _results_empty(self, batch_id: str, keys: set[str], view: BatchView) -> None:
        """``batch_id`` completed with no row at all: its calls fail, said, and go in no batch of this run."""
        error = BatchResultsEmpty(f"{self.name} batch {batch_id} is {view.state} ({view.succeeded} rows answered, "
                                  f"it says) but its results are empty: an error of the provider; its calls are not "
                                  "submitted again in this run (a rerun submits them again)")
        log.warning("%s", error)
        if self.store is not None:
            await self.store.update_batch(batch_id, RESULTS_EMPTY, view.succeeded, view.failed)
        for key in keys:
            if self._stored.get(key) == batch_id:
                self._stored.pop(key)
            if key in self._waiting:
                self._fail(self._waiting[key], error)
        view.settled = len(keys)

    def _settle(self, key: str, outcome: Outcome, batch_id: str) -> None:
        """Answer the call ``key`` from its row in ``batch_id``; a row without an answer goes in the
        next batch, or fails the call after ``rounds`` batches."""
        w = self._waiting.get(key)
        if w is None or w.future.done():
            return
        if isinstance(outcome, ChatResult):  # an answer is one, from whichever batch
            self._stored.pop(key, None)
            w.future.set_result(outcome)
            self.round_state.answered(w.task)
            return
        if self._stored.get(key) != batch_id:  # an older batch's failed row: the call is in a newer one
            return
        if isinstance(outcome, RowRefused) and self.api.refusals.learn_request(w.request, outcome.error):
            # refused a parameter, which its rows now go without: not a round
            w.rounds -= 1
            outcome = ServerError(str(outcome))
        if isinstance(outcome, TransientError) and w.rounds < self.rounds:  # only this row goes again
            self._enqueue(key, w)
            self._last = time.monotonic()
            if self._flusher is None or self._flusher.done():
                self._flusher = asyncio.create_task(self._flush_loop())
            return
        self._stored.pop(key, None)
        error = outcome if not isinstance(outcome, TransientError) else BatchRowFailed(
            f"{self.name} batch: no answer after {w.rounds} batch(es): {outcome}", status=outcome.status)
        self._fail(w, error)

    def _fail(self, w: _Waiter, error: Exception) -> None:
        if not w.future.done():
            w.future.set_exception(error)
            self.round_state.answered(w.task)

    def _show(self, view: BatchView) -> None:
        if self.on_status is not None:
            self.on_status(view)

    async def aclose(self) -> None:
        pending: list[asyncio.Future[Any]] = [*self._tasks, *self._resolving.values()]
        for task in [*pending, *([self._flusher] if self._flusher else [])]:
            task.cancel()
        await self.api.aclose()


def make_batch_client(model: str, *, cache: Any, base_url: str | list[str] | None = None, api_key: str | None = None,
                      api_key_env: str | None = None, model_name: str | None = None,
                      timeout: float = DEFAULT_TIMEOUT_S, quiet: float = DEFAULT_QUIET_S, poll: float = DEFAULT_POLL_S,
                      round_state: Rounds | None = None, deadline: float | None = None, **client_kwargs: Any) -> Client:
    """``make_client``'s batch twin: a Client whose calls go through ``model``'s batch API, with the
    batches logged in ``cache`` (the store). Every call of a run may wait in a batch at once.
    ``round_state``: the round state of the run's other batch clients, whose tasks ask this one too
    (a round then waits for all of them); by default its own. ``deadline``: seconds from a batch's
    creation after which it is cancelled (default: the provider's window and an hour)."""
    if isinstance(base_url, list):
        if len(base_url) > 1:
            raise ConfigurationError(Arg("batch", True), " takes one ", Arg("base_url", flag="--base-url"),
                                     " (a batch API has no replicas)")
        base_url = base_url[0] if base_url else None
    provider, name = parse_model(model)
    api = make_batch_api(provider, api_key=api_key, api_key_env=api_key_env, base_url=base_url, timeout=timeout)
    log_store = cache if hasattr(cache, "put_batch") else None
    batches = BatchProvider(api, model=model_name or name, log_store=log_store, quiet=quiet, poll=poll,
                            round_state=round_state, deadline=deadline)
    client_kwargs["concurrency"] = BATCH_SLOTS
    return Client(batches, cache=cache, model=model_name or name, name=f"{provider}/{name}", **client_kwargs)
