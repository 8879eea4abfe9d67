"""Where and how a model is called (`Endpoint`: what the CLI's endpoint options say, their defaults
defined here once), and the client of an endpoint, caching in an experiment's store."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import clients
from ..clients import DEFAULT_PRICES, Client, ConfigurationError, PriceTable
from ..clients.batch import DEFAULT_POLL_S, DEFAULT_QUIET_S, make_batch_client
from ..clients.errors import explain
from ..clients.limits import DEFAULT_MAX_COOLDOWN_S
from ..clients.providers import DEFAULT_TIMEOUT_S, key_env_for, parse_model, server_slots
from ..store import Store
from .errors import EndpointError, ExperimentError

# calls in flight when neither the endpoint nor its server says how many
TEACHER_CONCURRENCY = 16  # compile and its primitives
JUDGE_CONCURRENCY = 8  # the judge audit
CONCURRENCY = 64  # every other run


@dataclass(frozen=True)
class Endpoint:
    """Where and how a model is called; what the CLI's endpoint options (--base-url, --concurrency,
    --param, --extra-body, ...) say, with their defaults.

    ``base_urls``: OpenAI-compatible servers, several for replicas of one model. ``concurrency``:
    calls in flight (None: what a server says it runs at once, else the run's default above).
    ``extra_body``: top-level request-body fields (part of each call's cache key). ``max_cost``: USD.
    ``cache_tag``: enters every call's cache key, for a model whose weights changed behind its name
    (the key names the model, not the server's address). ``batch``: the calls go through the
    provider's batch API (no rate limits: every call waits in a batch), polled first after
    ``batch_poll`` seconds, submitted once none has come for ``batch_quiet``, cancelled when not ended
    ``batch_deadline`` seconds after its creation (None: the provider's window and an hour)."""

    model: str
    base_urls: Sequence[str] | None = None
    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key_env: str | None = None
    model_name: str | None = None
    cache_tag: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    max_cooldown: float = DEFAULT_MAX_COOLDOWN_S
    structured: str = "auto"
    prices: PriceTable = DEFAULT_PRICES
    max_cost: float | None = None
    batch: bool = False
    batch_poll: float = DEFAULT_POLL_S
    batch_quiet: float = DEFAULT_QUIET_S
    batch_deadline: float | None = None

    def explain(self, error: BaseException) -> str:
        """One line for a failed call to this endpoint (clients.errors.explain)."""
        provider = parse_model(self.model)[0]
        base_url = self.base_urls[0] if self.base_urls else None
        return explain(error, provider=provider, base_url=base_url,
                       key_env=key_env_for(provider, base_url, self.api_key_env))


def as_endpoint(model: str | Endpoint) -> Endpoint:
    """A bare model string is an Endpoint with the defaults."""
    return model if isinstance(model, Endpoint) else Endpoint(model)


def request_body(params: Sequence[str] | None, extra_body: str | None) -> dict[str, Any]:
    """An Endpoint's extra_body from the CLI's --extra-body (a JSON object) and --param NAME=VALUE
    options (VALUE is JSON, else a string; --param wins)."""
    body: dict = {}
    if extra_body:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            raise ExperimentError(f"--extra-body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ExperimentError("--extra-body must be a JSON object, e.g. '{\"top_k\": 20}'")
    for item in params or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ExperimentError(f"--param {item!r}: expected NAME=VALUE, e.g. --param top_k=20")
        try:
            body[name.strip()] = json.loads(raw)
        except ValueError:
            body[name.strip()] = raw  # not JSON: the string itself
    return body


async def endpoint_client(endpoint: Endpoint, store: Store, *, default_concurrency: int = CONCURRENCY,
                          notify: Callable[[str], None] = lambda _: None) -> Client:
    """A client of ``endpoint`` caching in ``store``. Without a concurrency, each server's own slot
    count where it says (a small server swamped with queued requests times them out), else
    ``default_concurrency``; without a model_name, a server listing one model is asked by that name.
    ``notify`` hears what is learned from a server."""
    concurrency = await _concurrency(endpoint, default_concurrency, notify)
    options = dict(extra_body=endpoint.extra_body, api_key_env=endpoint.api_key_env,
                   model_name=endpoint.model_name, cache_tag=endpoint.cache_tag, timeout=endpoint.timeout,
                   max_cooldown=endpoint.max_cooldown,
                   structured=endpoint.structured, prices=endpoint.prices, max_cost=endpoint.max_cost)
    try:
        if endpoint.batch:  # no rate limits: every call waits in a batch
            client = make_batch_client(endpoint.model, cache=store, base_url=endpoint.base_urls,
                                       poll=endpoint.batch_poll, quiet=endpoint.batch_quiet,
                                       deadline=endpoint.batch_deadline, **options)
        else:
            client = clients.make_client(  # read when called: a test may stand one in
                endpoint.model, base_url=endpoint.base_urls, cache=store, concurrency=concurrency,
                rpm=endpoint.rpm, tpm=endpoint.tpm, **options)
    except ConfigurationError as exc:
        raise EndpointError(str(exc)) from exc
    if endpoint.base_urls and not endpoint.model_name:
        name = await client.use_served_model()
        if name is not None:
            notify(f"{endpoint.base_urls[0]} serves one model, {name}: the requests carry that name "
                   "(--model-name NAME to choose)")
    return client


async def _concurrency(endpoint: Endpoint, default: int, notify: Callable[[str], None]) -> int | list[int]:
    if endpoint.concurrency is not None:
        return endpoint.concurrency
    per_replica = []
    for url in endpoint.base_urls or []:
        slots = await server_slots(url)
        if slots is not None:
            notify(f"{url} runs {slots} request(s) at once (its /props): --concurrency {slots}")
        per_replica.append(slots or default)
    return per_replica[0] if len(per_replica) == 1 else per_replica or default
