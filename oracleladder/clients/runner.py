"""The one runner every teacher/student worker calls: ``Client`` composes the cache and in-flight
sharing (``cache``), the limits (``limits``), the retries (``retry``), the usage accounting
(``usage``) and structured outputs (``structured``) over one Provider; ``make_client`` builds the
Client over a model's provider (``providers.make_provider``, from its wire's declaration)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeGuard, TypeVar

from pydantic import BaseModel

from .base import ChatRequest, ChatResult, Provider
from .batch_api import BatchAPI
from .cache import CallCache, InFlight
from .errors import (
    Arg,
    BadRequestError,
    BudgetReached,
    ConfigurationError,
    EndpointLost,
    InvalidUsage,
    ProviderError,
    RequestTimeout,
    TransientError,
    endpoint_failure,
    scrub,
)
from .function import ModelFunction
from .limits import DEFAULT_MAX_COOLDOWN_S, Budget, Concurrency, Cooldown, RateLimiter, Slot
from .prices import DEFAULT_PRICES, PriceTable
from .providers import DEFAULT_TIMEOUT_S, make_provider, parse_model
from .replicas import ReplicaProvider
from .retry import Retries
from .rounds import Rounds
from .structured import Modes, Shape
from .usage import Usage, prompt_bound

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


class BatchingProvider(Provider, Protocol):
    """A provider whose calls wait in a batch API (clients.batch.BatchProvider): what a Client drives of it."""

    batch: bool
    api: BatchAPI
    round_state: Rounds
    run_id: str | None
    submitted: int
    on_status: Callable[[Any], None] | None


def _batching(provider: Provider) -> TypeGuard[BatchingProvider]:
    return bool(getattr(provider, "batch", False))


class Client:
    """Runner over one Provider.

    ``await client.complete(request)`` -> cached result if stored, else a rate-limited, retried
    provider call whose result (or final error) is stored. Safe to share across many workers.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        cache: CallCache | None = None,
        concurrency: int = 64,
        start_concurrency: int | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        max_attempts: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        default_cooldown: float = 1.0,
        max_cooldown: float = DEFAULT_MAX_COOLDOWN_S,
        run_id: str | None = None,
        prices: PriceTable = DEFAULT_PRICES,
        max_cost: float | None = None,
        model: str | None = None,
        structured: str = "auto",
        extra_body: dict[str, Any] | None = None,
        name: str | None = None,
        cache_tag: str | None = None,
    ) -> None:
        self._modes = Modes(structured, provider.name)  # first: a mode the provider cannot take stops here
        self.provider = provider
        self.cache = cache
        self.concurrency = concurrency  # the most calls in flight (the workers a run starts)
        # replicas keep one concurrency each (ReplicaProvider); a single endpoint's is the client's
        self._replicas = isinstance(provider, ReplicaProvider)
        self._limit = Concurrency(concurrency, start_concurrency, scrub(getattr(provider, "base_url", None) or provider.name))
        self._rpm = RateLimiter(rpm) if rpm else None
        self._tpm = RateLimiter(tpm) if tpm else None
        self.default_cooldown = default_cooldown
        self._cooldown = Cooldown(max_cooldown, provider.name)
        self._retries = Retries(max_attempts, backoff_base, backoff_max, self._cooldown, self._count_retry)
        self.run_id = run_id
        self.prices = prices
        self.model = model  # the name the requests carry
        # the name results are filed under (a teacher's roadmap set): the user's provider/model,
        # also when the requests carry a server's own name for it (--model-name, /v1/models)
        self.name = name or f"{provider.name}/{model or 'default'}"
        # a model without a price costs "unknown" from the start, not $0 until its first call
        self.usage = Usage(prices=prices.name, cost_usd=0.0 if self.name in prices.models else None)
        self.extra_body = dict(extra_body or {})  # server parameters for every request's top level
        self.cache_tag = cache_tag  # in every call's key: what changed behind this model's name
        if max_cost is not None and self.name not in prices.models:
            raise ConfigurationError(Arg("max_cost"), f": no price for {self.name} in the {prices.name}; give one with ",
                                     Arg("prices", flag="--prices FILE"))
        self.max_cost = max_cost  # USD: no call is sent that could take spend past it
        self._budget = Budget(max_cost, self.name) if max_cost is not None else None
        self._batching = provider if _batching(provider) else None  # a batch API's: calls at the batch price
        self.batch = self._batching is not None
        # a batch provider's round state: a task that waits on another's call is not at work
        self._round_state = None if self._batching is None else self._batching.round_state
        self.last_error: ProviderError | None = None  # the last call's failure, for a run's summary
        # the failure of an endpoint that had answered (a server stopped): no call is sent after it
        self.lost: ProviderError | None = None
        self._inflight = InFlight()
        self._shapes: dict[type[BaseModel], Shape[Any]] = {}

    @property
    def budget_stop(self) -> str | None:
        """Why calls are refused, once the budget (``max_cost``) is reached."""
        return self._budget.stop if self._budget is not None else None

    # ---------------------------------------------------------------- a run's batches (``batch=True``)
    async def check_batch(self) -> None:
        """Fail at once, in one line, when this client batches and its endpoint has no batch API."""
        if self._batching is not None:
            await self._batching.api.check()

    def bind_run(self, run_id: str) -> None:
        """File this client's provider batches under the run ``run_id``."""
        if self._batching is not None:
            self._batching.run_id = run_id

    @property
    def batch_rows_submitted(self) -> int | None:
        """Rows this client submitted to a batch API (None without one)."""
        return None if self._batching is None else self._batching.submitted

    def on_batch_status(self, show: Callable[[Any], None]) -> None:
        """Tell ``show`` each change of one of this client's batches (a progress display)."""
        if self._batching is not None:
            self._batching.on_status = show

    # ---------------------------------------------------------------- building requests
    def request(self, messages: list[dict[str, str]] | str, *, k: int = 0, model: str | None = None,
                **params: Any) -> ChatRequest:
        """A ChatRequest for this client's provider and model (at a server other than the provider's
        own, named by both its names) and its cache tag; the client's ``extra_body`` (server
        parameters) goes under ``params["extra_body"]``, what the call's own ``extra_body`` says
        winning: fields for the request body's top level, part of the call key."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        extra = {**self.extra_body, **(params.get("extra_body") or {})}
        if extra:
            params["extra_body"] = extra
        return ChatRequest(provider=self.provider.name, model=model or self.model or "default",
                           messages=messages, params=params, k=k, cache_tag=self.cache_tag,
                           name=None if self.provider.endpoint is None else self.name)

    async def use_served_model(self) -> str | None:
        """When the server lists exactly one model (``/v1/models``) and it is not this client's
        model, the requests carry its name from now on (vLLM refuses other names); returns it."""
        served = getattr(self.provider, "served_models", None)
        names = await served() if served is not None else []
        if len(names) != 1 or names[0] == self.model:
            return None
        self.model = names[0]
        return self.model

    # ---------------------------------------------------------------- the call
    async def complete(self, request: ChatRequest) -> ChatResult:
        self.usage.calls += 1
        key = request.key()
        if self.cache is not None:
            hit = await self.cache.get_call(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return hit
        fut = self._inflight.get(key)
        if fut is not None:  # the same call already in flight: share its answer
            self.usage.cache_hits += 1
            if self._round_state is not None:  # on another task's call, which may be in a batch
                self._round_state.waiting()
            return await asyncio.shield(fut)
        fut = self._inflight.start(key)  # before any wait: the same call asked meanwhile shares this one
        reserved = 0.0
        try:
            # another process on the store may be asking it: its answer is waited for, not paid again
            shared = await self.cache.claim(key) if self.cache is not None else None
            if shared is None:
                if self._budget is not None:
                    if self._round_state is not None:  # waiting for room in the budget is not work: a round
                        self._round_state.waiting()  # goes out without this call
                    reserved = await self._budget.reserve(self.worst_cost(request), lambda: self.usage.cost_usd,
                                                          bool(request.params.get("max_tokens")))
                result = await self._call_with_retries(request)
        except BaseException as e:
            InFlight.fail(fut, e)
            if isinstance(e, ProviderError) and not isinstance(e, (BudgetReached, EndpointLost)):  # never sent
                if self.lost is None and self.usage.successes and endpoint_failure(e):
                    self.lost = e
                self.usage.failures += 1
                self.last_error = e
                if self.cache is not None:  # stored with its error, which ends the claim
                    await self.cache.put_call(request, None, error=f"{type(e).__name__}: {e}",
                                              run_id=self.run_id)
            elif self.cache is not None:
                await self.cache.release(key)
            raise
        finally:
            self._inflight.end(key)
            if self._budget is not None:
                self._budget.release(reserved)
        if shared is not None:
            fut.set_result(shared)
            self.usage.cache_hits += 1
            return shared
        fut.set_result(result)
        self.usage.successes += 1
        self._count(request, result)
        if self.cache is not None:
            await self.cache.put_call(request, result, run_id=self.run_id)
        return result

    def _count(self, request: ChatRequest, result: ChatResult) -> None:
        """Settle a paid call at the server's count; a reply without one at its bound (said once)."""
        if not result.metered:
            self.usage.unmetered += 1
            if self.usage.unmetered == 1:
                log.warning("%s sent a reply without usage: such replies are counted at their bound (the "
                            "prompt's UTF-8 bytes and the whole max_tokens)", self.name)
            result = self._at_bound(request, result)
        self.usage.add(self.name, result, self.prices, batch=self.batch)

    @staticmethod
    def _at_bound(request: ChatRequest, result: ChatResult) -> ChatResult:
        """``result`` counted at its bound: the most a server can have billed for ``request``."""
        return result.model_copy(update={"tokens_in": prompt_bound(request),
                                         "tokens_out": int(request.params.get("max_tokens") or 0)})

    def worst_cost(self, request: ChatRequest) -> float | None:
        """The most ``request`` can cost (its prompt at its bound, and an answer of its whole
        max_tokens); None if this client's model has no price."""
        return self.prices.cost(self.name, prompt_bound(request), float(request.params.get("max_tokens") or 0),
                                batch=self.batch)

    def _count_retry(self) -> None:
        self.usage.retries += 1

    async def _wait_cooldown(self) -> None:
        waited = await self._cooldown.wait()
        if waited is not None:
            self.usage.cooldown_waits += 1
            self.usage.cooldown_wait_s += waited

    async def _attempt(self, request: ChatRequest, est: float, slot: Slot) -> ChatResult:
        await self._wait_cooldown()
        if self._rpm:
            await self._rpm.acquire(1)
        if self._tpm:
            await self._tpm.acquire(est)
        await self._wait_cooldown()
        self.usage.requests += 1
        try:
            result = await self.provider.complete(request)
        except InvalidUsage:  # answered, so billed, at a count that is a lie: counted at its bound
            self.usage.add(self.name, self._at_bound(request, ChatResult(text="")), self.prices, batch=self.batch)
            raise
        except TransientError as e:
            if e.status == 429:
                self.usage.rate_limited += 1
                if not self._replicas:  # a replica cools down and lowers its own concurrency
                    self._cooldown.start(e.retry_after if e.retry_after is not None else self.default_cooldown)
            elif isinstance(e, RequestTimeout):
                self.usage.timeouts += 1
            if (e.status == 429 or isinstance(e, RequestTimeout)) and not self._replicas:
                self._limit.overloaded(slot.epoch, str(e))
            raise
        if not self._replicas:
            self._limit.answered()
        if self._tpm:
            self._tpm.adjust(result.tokens_in + result.tokens_out - est)
        return result

    async def _call_with_retries(self, request: ChatRequest) -> ChatResult:
        # The slot comes first, so thousands of queued calls cost next to nothing until their turn;
        # it is given back while the call sleeps between attempts.
        async with Slot(self._limit) as slot:
            if self.lost is not None:
                raise EndpointLost(f"not sent, the endpoint was lost: {self.lost}")
            est = self._estimate_tokens(request) if self._tpm else 0.0
            return await self._retries.run(slot.sleep, self._attempt, request, est, slot)

    @staticmethod
    def _estimate_tokens(request: ChatRequest) -> float:
        """A request's tokens for the per-minute bucket, which the reply's count then corrects: its
        prompt at 4 characters a token, and its max_tokens."""
        prompt = sum(len(m.get("content") or "") for m in request.messages) // 4 + 1
        return prompt + float(request.params.get("max_tokens") or 256)

    # ---------------------------------------------------------------- structured outputs
    @property
    def structured_mode(self) -> str:
        """The structured mode this client's calls are asked in now (after a rejected one, the next)."""
        return self._modes.current

    async def structured(self, request: ChatRequest, response_model: type[M]) -> M:
        """The reply to ``request`` parsed into ``response_model``: exactly one model call, through
        ``complete`` (cached). An invalid reply raises StructuredOutputError (its text, its validation
        errors, its usage, and the messages that ask again: the caller's loop decides); a
        provider's own failure is raised as it is.

        Asked in this client's structured mode; with "auto", a mode the server rejects is learned
        for this client's endpoint, said once, and the call re-sent in the next mode."""
        shape = self._shapes.get(response_model)
        if shape is None:
            shape = self._shapes[response_model] = Shape(response_model)
        while True:
            mode = self._modes.current
            asked = shape.request(request, mode)
            try:
                reply = await self.complete(asked)
            except BadRequestError as e:
                where = f"{self.name} at " + (self.provider.endpoint or "the provider's API")
                if not self._modes.rejects(mode, e, where):
                    raise
                continue
            return shape.parse(asked, reply)

    async def aclose(self) -> None:
        await self.provider.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def make_client(
    model: str,
    *,
    base_url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    model_name: str | None = None,
    cache: CallCache | None = None,
    transport: str = "auto",
    timeout: float = DEFAULT_TIMEOUT_S,
    function: ModelFunction | None = None,
    providers: Sequence[Provider] | None = None,
    **client_kwargs: Any,
) -> Client:
    """``make_client("openai/gpt-5.4", cache=store, concurrency=32)`` -> Client.

    Several ``base_url``s are replicas of one model (:class:`ReplicaProvider`): ``concurrency`` is
    then each replica's (one int, or one per replica), and the client's is their sum.
    ``start_concurrency`` (likewise): the calls in flight to start at, growing to ``concurrency``
    while calls are answered (limits.Concurrency); default ``concurrency``.
    ``model_name``: the name the requests carry (a server's served name), instead of the part of
    ``model`` after the provider. ``api_key_env``: the variable holding this endpoint's key.
    ``function``: a python/ model's function (clients.function); ``providers``: the providers to ask
    instead of those of ``base_url``, each a replica (a cluster's workers, `oracleladder.cluster`)."""
    provider_name, name = parse_model(model)
    start = client_kwargs.pop("start_concurrency", None)

    def made(url: str | None) -> Provider:
        return make_provider(provider_name, api_key=api_key, api_key_env=api_key_env, base_url=url,
                             timeout=timeout, transport=transport, function=function, model=name)

    urls: list[str] = []  # the replicas' (several providers)
    if providers is None:
        if base_url is None or isinstance(base_url, str):
            providers = [made(base_url)]
        else:
            urls = list(base_url)
            providers = [made(url) for url in urls]
    else:
        urls = [getattr(p, "base_url", p.name) for p in providers]
    called, full_name = model_name or name, f"{provider_name}/{name}"
    if len(providers) == 1:
        return Client(providers[0], cache=cache, start_concurrency=start, model=called, name=full_name,
                      **client_kwargs)
    replicas = ReplicaProvider(providers, urls, client_kwargs.pop("concurrency", 64), start=start,
                               max_cooldown=client_kwargs.get("max_cooldown", DEFAULT_MAX_COOLDOWN_S))
    return Client(replicas, cache=cache, concurrency=replicas.concurrency, model=called, name=full_name,
                  **client_kwargs)
