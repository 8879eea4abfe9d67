"""Where and how a model is called (`Endpoint`: what the CLI's endpoint options say, their defaults
defined here once), and the client of an endpoint, caching in an experiment's store."""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, TypedDict
from urllib.parse import urlsplit

from .. import clients
from ..clients import DEFAULT_PRICES, Client, ConfigurationError, PriceTable
from ..clients.batch import DEFAULT_POLL_S, DEFAULT_QUIET_S, make_batch_client
from ..clients.errors import explain, register_secret, scrub
from ..clients.function import ModelFunction
from ..clients.limits import DEFAULT_MAX_COOLDOWN_S
from ..clients.providers import DEFAULT_TIMEOUT_S, key_env_for, parse_model, resolve_key, server_capacity
from ..clients.registry import wire
from ..cluster import Cluster, Wire
from ..store import Store
from .errors import Arg, EndpointError, ExperimentError

# calls in flight when neither the endpoint nor its server says how many
TEACHER_CONCURRENCY = 16  # compile and its primitives
JUDGE_CONCURRENCY = 8  # the judge audit
CONCURRENCY = 64  # every other run
# where a server that does not say how many requests it runs at once starts (it grows from there)
START_CONCURRENCY = 4

# request-body fields the toolkit sets itself, and the option that sets each
OWNED_FIELDS = {
    "model": "--model-name", "messages": "the run's prompts", "max_tokens": "--max-tokens",
    "max_completion_tokens": "--max-tokens", "temperature": "--temperature", "response_format": "--structured",
    "tools": "--structured", "tool_choice": "--structured", "n": "--k", "stream": "none: answers are read whole",
}


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
    ``batch_deadline`` seconds after its creation (None: the provider's window and an hour).
    ``function``: a python/NAME model's Python function (clients.function; `as_endpoint` makes one)."""

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
    function: ModelFunction | None = None
    notes: tuple[str, ...] = field(default=(), init=False)  # what was made of the base URLs given

    def __post_init__(self) -> None:
        """Each base URL checked (an http(s) URL; a chat-completions URL cut to its base, with a
        note); a model whose wire reads a base URL from a variable (openai/: OPENAI_BASE_URL) takes
        its value when none is given, with a note (its key stays with the provider's own host unless
        ``api_key_env`` names one)."""
        try:
            spec = wire(parse_model(self.model)[0])
        except ConfigurationError as exc:
            raise EndpointError(*exc.parts) from None
        if spec.function != (self.function is not None):
            raise EndpointError(f"{self.model}: a python/NAME model is a Python function, given through the "
                                "Python API (Experiment.probe(student=fn, name=NAME)), and a function is no other model")
        if self.function is not None and (self.base_urls or self.batch):
            raise EndpointError(f"{self.model} is a Python function: it has no base URL and no batch API")
        urls, notes = list(self.base_urls or []), []
        if not urls and spec.base_url_env and os.environ.get(spec.base_url_env):
            urls = [os.environ[spec.base_url_env]]
            notes.append(f"calling {scrub(urls[0])}, from {spec.base_url_env} ({spec.key_env[0]} goes only to "
                         f"{urlsplit(spec.base_url or '').hostname}; --api-key-env NAME names this server's key)")
        checked = []
        for url in urls:
            base, note = _base_url(url, spec.call_path, self.api_key_env)
            checked.append(base)
            notes += [note] if note else []
        object.__setattr__(self, "base_urls", checked or None)
        object.__setattr__(self, "notes", tuple(notes))

    def check_key(self) -> None:
        """Raise EndpointError, before any store is opened, when the key this endpoint needs is not set."""
        provider = parse_model(self.model)[0]
        if not wire(provider).key_env:  # a wire that takes no key (the embedded model, a function, a script)
            return
        urls: Sequence[str | None] = self.base_urls or [None]  # none: the provider's own
        for url in urls:
            try:
                resolve_key(provider, None, url, self.api_key_env)
            except ConfigurationError as exc:
                raise EndpointError(*exc.parts) from None

    def explain(self, error: BaseException) -> str:
        """One line for a failed call to this endpoint (clients.errors.explain)."""
        provider = parse_model(self.model)[0]
        base_url = self.base_urls[0] if self.base_urls else None
        return explain(error, provider=provider, base_url=base_url,
                       key_env=key_env_for(provider, base_url, self.api_key_env))


def as_endpoint(model: str | Endpoint | ModelFunction, *, name: str | None = None,
                version: str | None = None) -> Endpoint:
    """A bare model string is an Endpoint with the defaults; a Python function is the model
    python/NAME, its calls keyed by ``name`` and ``version`` (the toolkit cannot see its code change:
    a new version makes new calls)."""
    if isinstance(model, (str, Endpoint)):
        if name is not None or version is not None:
            raise ExperimentError("name= and version= name a Python function as a model, not a model string "
                                  "or an Endpoint")
        return model if isinstance(model, Endpoint) else Endpoint(model)
    if not callable(model):
        raise ExperimentError(f"a model is a model string, an Endpoint or a Python function, not {type(model).__name__}")
    if not name:
        raise ExperimentError("a Python function as a model needs a name (name=...): its calls and results "
                              "are filed under python/NAME")
    return Endpoint(f"python/{name}", function=model, cache_tag=version)


def _base_url(url: str, path: str | None, api_key_env: str | None) -> tuple[str, str | None]:
    """``url`` as the wire takes it, and a note when it ended with ``path``, the path each call adds
    itself (its wire's ``call_path``), and was cut; ExperimentError when it is no http(s)
    URL, when it cannot be parsed (a bad port, an unclosed IPv6 bracket), or when it holds a user and
    password and ``api_key_env`` names a key too. Its password is scrubbed from every message."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 (raises on a port that is no number or out of range)
    except ValueError as exc:
        raise ExperimentError(f"base URL {scrub(url)!r} is malformed: {exc}") from None
    register_secret(parts.password)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ExperimentError(f"base URL {scrub(url)!r} is not an http(s) URL: did you mean http://{scrub(url.strip())} ?")
    if parts.username is not None and api_key_env:
        raise ExperimentError(f"base URL {scrub(url)!r} holds a user and password, and --api-key-env names a key: "
                              "give the server one of them")
    if path and parts.path.rstrip("/").endswith(path):
        base = url.strip().rstrip("/").removesuffix(path)
        return base, f"{scrub(url)} ends with {path}, which each call adds itself: calling {scrub(base)}"
    return url.strip(), None


_EXTRA_BODY = Arg("extra_body")


def request_body(params: Sequence[str] | None, extra_body: str | None) -> dict[str, Any]:
    """An Endpoint's extra_body from the CLI's --extra-body (a JSON object) and --param NAME=VALUE
    options (VALUE is JSON, else a string; --param wins). A field the toolkit sets itself
    (OWNED_FIELDS) is refused with the option that sets it."""
    body: dict = {}
    if extra_body:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            raise ExperimentError(_EXTRA_BODY, f" is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ExperimentError(_EXTRA_BODY, " must be a JSON object, e.g. '{\"top_k\": 20}'")
    for item in params or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ExperimentError(Arg("params", item, flag="--param"), ": expected NAME=VALUE, e.g. ",
                                  Arg("params", "top_k=20", flag="--param"))
        try:
            body[name.strip()] = json.loads(raw)
        except ValueError:
            body[name.strip()] = raw  # not JSON: the string itself
    owned = [name for name in body if name in OWNED_FIELDS]
    if owned:
        by_param = bool(params) and any(p.partition("=")[0].strip() == owned[0] for p in params or [])
        option = Arg("params", flag="--param") if by_param else _EXTRA_BODY
        raise ExperimentError(option, f" {owned[0]}: the toolkit sets {owned[0]} itself (and records it with the "
                              f"run); use {OWNED_FIELDS[owned[0]]}")
    return body


def refuse_batch_on(cluster: Cluster | None, endpoint: Endpoint) -> None:
    """Refuses (EndpointError) an endpoint's batch API on a cluster: every client made says it, and `ladder`
    before a cluster starts."""
    if cluster is not None and endpoint.batch:
        raise EndpointError(Arg("cluster", flag="--ray"), " and ", Arg("batch", True),
                            " do not go together: a provider's batch API is one queue already")


class _ClientOptions(TypedDict):
    """What an endpoint says of its client beyond its model, URLs and concurrency: the same for a batch client."""

    extra_body: dict[str, Any]
    api_key_env: str | None
    model_name: str | None
    cache_tag: str | None
    timeout: float
    max_cooldown: float
    structured: str
    prices: PriceTable
    max_cost: float | None


async def endpoint_client(endpoint: Endpoint, store: Store, *, default_concurrency: int = CONCURRENCY,
                          notify: Callable[[str], None] = lambda _: None, cluster: Cluster | None = None) -> Client:
    """A client of ``endpoint`` caching in ``store``. Its concurrency: the endpoint's, else each
    server's own where it says (a small server swamped with queued requests times them out), else
    ``default_concurrency``, where a server that does not say starts at START_CONCURRENCY and grows;
    lowered at timeouts and 429s (clients.limits.Concurrency). Without a model_name, a server listing
    one model is asked by that name. ``notify`` hears the endpoint's notes, the concurrency and why,
    and what is learned from a server. On a ``cluster``, each of its workers asks the endpoint (one
    replica each, with that concurrency), on its own node."""
    refuse_batch_on(cluster, endpoint)
    for note in endpoint.notes:
        notify(note)
    ceiling, start = await _concurrency(endpoint, default_concurrency, notify)
    options = _ClientOptions(extra_body=endpoint.extra_body, api_key_env=endpoint.api_key_env,
                             model_name=endpoint.model_name, cache_tag=endpoint.cache_tag, timeout=endpoint.timeout,
                             max_cooldown=endpoint.max_cooldown, structured=endpoint.structured,
                             prices=_prices(endpoint), max_cost=endpoint.max_cost)
    try:
        if endpoint.batch:  # no rate limits: every call waits in a batch
            client = make_batch_client(endpoint.model, cache=store,
                                       base_url=None if endpoint.base_urls is None else list(endpoint.base_urls),
                                       poll=endpoint.batch_poll, quiet=endpoint.batch_quiet,
                                       deadline=endpoint.batch_deadline, **options)
        else:
            provider, _ = parse_model(endpoint.model)
            workers = None if cluster is None else cluster.providers(
                Wire(provider, tuple(endpoint.base_urls or [None]), endpoint.api_key_env, endpoint.timeout))
            client = clients.make_client(  # read when called: a test may stand one in
                endpoint.model, base_url=endpoint.base_urls, cache=store, concurrency=ceiling,
                start_concurrency=start, rpm=endpoint.rpm, tpm=endpoint.tpm, function=endpoint.function,
                providers=workers, **options)
    except ConfigurationError as exc:
        raise EndpointError(*exc.parts) from exc
    if endpoint.base_urls and not endpoint.model_name:
        name = await client.use_served_model()
        if name is not None:
            notify(f"{scrub(endpoint.base_urls[0])} serves one model, {_shown(name)}: the calls for {endpoint.model} are "
                   f"cached as calls of '{name}', however the server spells its path and at any replica "
                   "(--model-name NAME to choose)")
            # a store from before keyed them by the path as a server listed it: the migration to v21 re-keyed them
            for spelled, n in (await store.spelled_before(client.provider.name, name)).items():
                notify(f"{n} calls cached as calls of '{spelled}' (the path a server listed, before calls named "
                       f"the model by its file) answer as calls of '{name}'")
    return client


def _shown(served: str) -> str:
    """A served model's identity (`served_identity`) as a message shows it: a weights file as a file."""
    return f"the file {served}" if PurePath(served).suffix == ".gguf" else served


def _prices(endpoint: Endpoint) -> PriceTable:
    """The endpoint's price table, where a model without a price served by one's own server (a
    loopback or private address), or run by what its wire says runs it free (a Python function, a
    script), costs nothing: a run and its cached rerun both say so."""
    provider, name = parse_model(endpoint.model)
    model = f"{provider}/{name}"
    own = bool(endpoint.base_urls and all(map(_own_server, endpoint.base_urls)))
    where = wire(provider).free or ("a server of one's own" if own else None)
    if model in endpoint.prices.models or where is None:
        return endpoint.prices
    return PriceTable(f"{endpoint.prices.name}; {model} free on {where}",
                      {**endpoint.prices.models, model: (0.0, 0.0, 0.0, 0.0)})


def _own_server(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    return address.is_loopback or address.is_private


async def _concurrency(endpoint: Endpoint, default: int, notify: Callable[[str], None],
                       ) -> tuple[int | list[int], int | list[int]]:
    """The most calls in flight and the number to start at: one each, or one per replica; said."""
    lowered = "lowered at timeouts and 429s"
    if endpoint.batch:
        return default, default
    if endpoint.concurrency is not None:
        n = endpoint.concurrency
        notify(f"calls in flight: {n} (--concurrency; {lowered})")
        return n, n
    if not endpoint.base_urls:
        notify(f"calls in flight: {default} (the default; --concurrency N to choose; {lowered})")
        return default, default
    ceilings, starts = [], []
    for url in endpoint.base_urls:
        said = await server_capacity(url)
        url = scrub(url)  # as shown
        if said is not None and said.slots is not None:
            notify(f"{url} runs {said.slots} request(s) at once ({said.source}): --concurrency {said.slots}")
            ceilings.append(said.slots)
            starts.append(said.slots)
        elif said is not None:
            notify(f"{url} is {said.source}, which batches the requests it gets: --concurrency {default} "
                   f"({lowered})")
            ceilings.append(default)
            starts.append(default)
        else:
            start = min(START_CONCURRENCY, default)
            notify(f"{url} does not say how many requests it runs at once: calls in flight start at {start} and "
                   f"grow by one while they are answered, up to {default} ({lowered}; --concurrency N to choose)")
            ceilings.append(default)
            starts.append(start)
    if len(ceilings) == 1:
        return ceilings[0], starts[0]
    return ceilings, starts
