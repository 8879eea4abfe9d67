"""What a provider's batch API answers to (``BatchAPI``) and the part each wire's shares (``BatchWire``),
for the batch scheduler (``batch``) and the wires that have one (``openai_api``, ``anthropic_api``,
``google_api``): a batch's status, a row's outcome, and the errors of a create and of a row."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .base import ChatRequest, ChatResult
from .errors import (
    Arg,
    BadRequestError,
    CannotConnect,
    ConfigurationError,
    MalformedResponse,
    ProviderError,
    TransientError,
)
from .providers import endpoint_of
from .registry import Connection
from .wire import Refusals

LIST_LAG_S = 60.0  # how long after a lost create reply a batch the provider made may still be missing from its list
WINDOW_S = 24 * 3600.0  # OpenAI's and Anthropic's completion window
CLOCK_SKEW_S = 60.0  # the provider's clock may be this far behind ours (a batch's created_at against the intent's)
# the providers' words for a batch that will change no more (OpenAI's, then Anthropic's)
ENDED = {"completed", "expired", "cancelled", "failed", "ended"}
# of those, the states whose results hold every row (Anthropic's "ended" lists cancelled rows too)
COMPLETED = {"completed", "ended"}


@dataclass
class BatchStatus:
    """What the provider says of one batch now."""

    state: str
    succeeded: int
    failed: int


Outcome = ChatResult | ProviderError
# a results row: its custom_id and outcome; a line that names no custom_id (cut short, not JSON, none
# in it) is (None, why): its call has no row, and goes again
Row = tuple[str | None, Outcome]


def read_rows(text: str, outcome: Callable[[dict[str, Any]], Outcome], where: str) -> Iterator[Row]:
    """Each line of a results file ``text`` as a row, one at a time: a line that cannot be read is that
    row's failure, never the file's. ``outcome``: a line's outcome (a KeyError, TypeError, ... on a
    line that is not one is a MalformedResponse)."""
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
        except json.JSONDecodeError as e:
            yield None, MalformedResponse(f"{where} line {n} is not JSON ({e.msg})")
            continue
        if not isinstance(custom_id, str):
            yield None, MalformedResponse(f"{where} line {n} has no custom_id")
            continue
        try:
            yield custom_id, outcome(line)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
            yield custom_id, MalformedResponse(f"{where} line {n} is not a results row ({e!r})")


class CreateLost(TransientError):
    """A batch create whose reply was lost (a timeout, a dropped connection, a 5xx): the provider may
    have made the batch, so its calls are not submitted again before it is looked up."""


def create_error(error: ProviderError) -> ProviderError:
    """A failed create call's error: a refusal (a 4xx) or no connection at all made no batch; any
    other failure is a ``CreateLost``."""
    if isinstance(error, CannotConnect) or (error.status is not None and 400 <= error.status < 500):
        return error
    return CreateLost(f"batch create reply lost: {error}", status=error.status)


class RowRefused(BadRequestError):
    """A batch row the provider refused (HTTP 400), with its error body: it may name a parameter the
    model refuses, which its next row goes without (as online, ``wire.Refusals``)."""

    def __init__(self, message: str, error: Any) -> None:
        super().__init__(message, status=400)
        self.error = error


class BatchAPI(Protocol):
    """One provider's batch API."""

    name: str
    endpoint: str | None
    max_requests: int
    max_bytes: int
    list_lag: float
    window: float  # seconds within which the provider promises to end a batch
    refusals: Refusals  # the parameters each model refused, which its rows go without

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """The batch row asking ``request``."""
        ...

    async def check(self) -> None:
        """Raise at once, in one line, when the endpoint has no batch API."""
        ...

    async def submit(self, entries: list[dict[str, Any]], intent: str) -> str:
        """Create a batch of ``entries`` for the stored intent ``intent``; its id. Raises ``CreateLost``
        when the provider may have made it, another ProviderError when it certainly did not."""
        ...

    async def find(self, intent: str, requests: int, at: datetime, known: set[str]) -> str | None:
        """The id of the batch created for ``intent`` (of ``requests`` rows, stored at ``at``; not one
        of ``known``) if the provider lists it."""
        ...

    async def status(self, batch_id: str) -> BatchStatus: ...

    def results(self, batch_id: str) -> AsyncIterator[Row]:
        """Each row of an ended batch (``read_rows``): its custom_id and its outcome."""
        ...

    async def cancel(self, batch_id: str) -> None: ...

    async def aclose(self) -> None: ...


class BatchWire:
    """What each wire's batch API class (a ``BatchAPI``) takes from here: ``list_lag`` and ``window``
    unless it declares its own (it declares ``name``, its provider's, and its limits), the endpoint its
    call keys name, and a ``check``'s 404 said as a server without a batch API."""

    name: str
    list_lag = LIST_LAG_S
    window = WINDOW_S

    def __init__(self, connection: Connection) -> None:
        self.endpoint = endpoint_of(self.name, connection.base_url)
        self._where = connection.base_url or f"the {self.name} API"

    def unavailable(self, error: ProviderError) -> ProviderError:
        """A failed ``check``'s error: at an HTTP 404, that this server has no batch API."""
        if error.status != 404:
            return error
        return ConfigurationError(Arg("batch", True), f": {self._where} has no batch API "
                                  f"({' '.join(str(error).split())[:120]}); run without ", Arg("batch", True))
