"""The one runner every teacher/student worker calls: cache, limits, retries, usage accounting,
and instructor-based structured outputs whose every raw attempt is a cached ChatRequest."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

import instructor
from instructor.core.exceptions import InstructorRetryException
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from .base import ChatRequest, ChatResult, Provider
from .errors import BadRequestError, BudgetReached, ConfigurationError, ProviderError, RequestTimeout, TransientError
from .prices import DEFAULT_PRICES, PriceTable
from .replicas import ReplicaProvider

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)
DEFAULT_MAX_COOLDOWN_S = 120.0

class CallCache(Protocol):
    """The slice of ``oracleladder.store.Store`` the runner needs."""

    async def get_call(self, key: str) -> ChatResult | None: ...

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None) -> None: ...


class MemoryCache:
    """In-process CallCache (tests, one-off scripts). Errors are remembered but never served."""

    def __init__(self) -> None:
        self.results: dict[str, ChatResult] = {}
        self.errors: dict[str, str] = {}

    async def get_call(self, key: str) -> ChatResult | None:
        return self.results.get(key)

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None) -> None:
        k = request.key()
        if result is not None:
            self.results[k] = result
            self.errors.pop(k, None)
        elif error is not None:
            self.errors[k] = error


@dataclass
class Usage:
    """Counters for one run (one Client)."""

    requests: int = 0  # HTTP attempts actually sent (including retried ones)
    calls: int = 0  # complete() calls
    cache_hits: int = 0
    successes: int = 0
    failures: int = 0
    retries: int = 0
    rate_limited: int = 0  # 429s seen
    cooldown_waits: int = 0  # sends that had to wait for the shared 429 cool-down
    cooldown_wait_s: float = 0.0
    timeouts: int = 0  # attempts cut off by the request timeout
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0  # at the price paid, from the price table named below
    prices: str = DEFAULT_PRICES.name
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, r: ChatResult, prices: PriceTable, *, batch: bool = False) -> None:
        """Count one paid call of model ``name`` (provider/model), at the batch price if ``batch``."""
        self.tokens_in += r.tokens_in
        self.tokens_out += r.tokens_out
        c = prices.cost(name, r.tokens_in, r.tokens_out, batch=batch)
        m = self.by_model.get(name)
        if m is None:
            m = self.by_model[name] = {"requests": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        m["requests"] += 1
        m["tokens_in"] += r.tokens_in
        m["tokens_out"] += r.tokens_out
        if c is None:
            m["cost_usd"] = None
            self.cost_usd = None
        else:
            if m["cost_usd"] is not None:
                m["cost_usd"] += c
            if self.cost_usd is not None:
                self.cost_usd += c

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["by_model"] = {k: dict(v) for k, v in self.by_model.items()}
        return d


class RateLimiter:
    """Token bucket shared by every worker of a Client: ``rate`` units per minute, burst ``rate``."""

    def __init__(self, per_minute: float, burst: float | None = None) -> None:
        self.rate_s = per_minute / 60.0
        self.capacity = burst if burst is not None else per_minute
        self.tokens = self.capacity
        self.t = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.t) * self.rate_s)
        self.t = now

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(amount, self.capacity)
        async with self._lock:  # FIFO: a big request is not starved by small ones
            while True:
                self._refill()
                if self.tokens >= amount:
                    self.tokens -= amount
                    return
                await asyncio.sleep((amount - self.tokens) / self.rate_s)

    def adjust(self, delta: float) -> None:
        """Charge (delta > 0) or refund (delta < 0) after the real cost is known."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - delta)


class _Slot:
    """One of a Client's concurrency slots: held for a whole call, given back while it sleeps."""

    def __init__(self, sem: asyncio.Semaphore) -> None:
        self._sem = sem
        self._held = False

    async def __aenter__(self) -> "_Slot":
        await self._sem.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._held:
            self._held = False
            self._sem.release()

    async def sleep(self, seconds: float) -> None:
        self._held = False
        self._sem.release()
        await asyncio.sleep(seconds)
        await self._sem.acquire()  # a cancel here leaves no slot held, and none is released twice
        self._held = True


_schema_var: contextvars.ContextVar[tuple[ChatRequest, str, dict[str, Any]] | None] = contextvars.ContextVar(
    "oracleladder_structured", default=None
)
_INSTRUCTOR_DROP = {"model", "messages", "stream", "response_model", "max_retries", "validation_context",
                    "context", "strict", "hooks"}

# How a structured answer is asked for, strongest first (instructor's modes do the asking and the
# parsing): a JSON-schema response_format; a JSON-object response_format carrying the schema (what
# llama.cpp's servers take) with the schema in the prompt; a forced tool call; plain JSON asked for
# in the prompt. "auto" starts at the first and steps down when a server rejects a mode.
STRUCTURED_MODES: dict[str, instructor.Mode] = {
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "json_object": instructor.Mode.JSON,
    "tools": instructor.Mode.TOOLS,
    "md_json": instructor.Mode.MD_JSON,
}
_NAMES_MODE = re.compile(r"response_format|json_schema|json_object|tool|schema", re.IGNORECASE)
# Providers whose wire has no OpenAI response_format or tools: the schema goes in the prompt.
_PROMPT_ONLY = {"anthropic"}


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
    ) -> None:
        if structured != "auto" and structured not in STRUCTURED_MODES:
            raise ConfigurationError(f"unknown structured mode {structured!r}; known: auto, "
                                     + ", ".join(STRUCTURED_MODES))
        self.provider = provider
        self.cache = cache
        self.concurrency = concurrency
        self._sem = asyncio.Semaphore(concurrency)
        self._rpm = RateLimiter(rpm) if rpm else None
        self._tpm = RateLimiter(tpm) if tpm else None
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.default_cooldown = default_cooldown
        # no wait is longer: one 429 with Retry-After: 3600 must not stop every worker for an hour
        self.max_cooldown = max_cooldown
        self._warned_retry_after = False
        self.run_id = run_id
        self.prices = prices
        self.max_cost = max_cost  # USD: no call is sent that could take spend past it
        self.budget_stop: str | None = None  # why calls are refused, once the budget is reached
        self._reserved = 0.0  # the most the calls in flight can still cost
        self._released = asyncio.Event()  # set (and replaced) when a call in flight ends
        self.model = model  # the name the requests carry
        # the name results are filed under (a teacher's roadmap set): the user's provider/model,
        # also when the requests carry a server's own name for it (--model-name, /v1/models)
        self.name = name or f"{provider.name}/{model or 'default'}"
        self.extra_body = dict(extra_body or {})  # server parameters for every request's top level
        if max_cost is not None and self.name not in prices.models:
            raise ConfigurationError(f"--max-cost: no price for {self.name} in the {prices.name}; "
                                     "give one with --prices FILE")
        self.usage = Usage(prices=prices.name)
        self.batch = bool(getattr(provider, "batch", False))  # a batch API's provider: calls at the batch price
        self.last_error: ProviderError | None = None  # the last call's failure, for a run's summary
        self._cooldown_until = 0.0  # monotonic; ONE cool-down shared by all workers after a 429
        self._inflight: dict[str, asyncio.Future[ChatResult]] = {}
        if structured != "auto":
            self._modes = [structured]
        else:
            self._modes = ["md_json"] if provider.name in _PROMPT_ONLY else list(STRUCTURED_MODES)
        self._instructors: dict[str, Any] = {}
        self._response_models: dict[type[BaseModel], tuple[type[BaseModel], dict[str, Any]]] = {}

    # ---------------------------------------------------------------- building requests
    def request(self, messages: list[dict[str, str]] | str, *, k: int = 0, model: str | None = None,
                response_schema: dict[str, Any] | None = None, **params: Any) -> ChatRequest:
        """A ChatRequest for this client's provider, model and endpoint; the client's ``extra_body``
        (server parameters) goes under ``params["extra_body"]``, what the call's own ``extra_body``
        says winning: fields for the request body's top level, part of the call key."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        extra = {**self.extra_body, **(params.get("extra_body") or {})}
        if extra:
            params["extra_body"] = extra
        return ChatRequest(provider=self.provider.name, model=model or self.model or "default",
                           messages=messages, params=params, k=k, response_schema=response_schema,
                           endpoint=self.provider.endpoint)

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
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut  # before any wait: the same call asked meanwhile shares this one
        reserved = 0.0
        try:
            reserved = await self._reserve(request)
            result = await self._call_with_retries(request)
        except BaseException as e:
            if not fut.done():
                fut.set_exception(e)
                fut.exception()  # mark retrieved
            if isinstance(e, ProviderError) and not isinstance(e, BudgetReached):  # that one was never sent
                self.usage.failures += 1
                self.last_error = e
                if self.cache is not None:
                    await self.cache.put_call(request, None, error=f"{type(e).__name__}: {e}",
                                              run_id=self.run_id)
            raise
        finally:
            self._inflight.pop(key, None)
            self._release(reserved)
        fut.set_result(result)
        self.usage.successes += 1
        self.usage.add(self.name, result, self.prices, batch=self.batch)
        if self.cache is not None:
            await self.cache.put_call(request, result, run_id=self.run_id)
        return result

    def worst_cost(self, request: ChatRequest) -> float | None:
        """The most ``request`` can cost (its prompt, and an answer of its whole max_tokens); None if
        this client's model has no price."""
        return self.prices.cost(self.name, self._prompt_tokens(request), float(request.params.get("max_tokens") or 0),
                                batch=self.batch)

    async def _reserve(self, request: ChatRequest) -> float:
        """With a budget (``max_cost``): hold the worst cost of ``request`` until it ends. A call that
        fits only once calls in flight end waits for them; once even the spend so far leaves no room
        for it, raises BudgetReached, and so does every later call."""
        if self.max_cost is None:
            return 0.0
        worst = self.worst_cost(request)
        while self.budget_stop is None:
            spent = self.usage.cost_usd
            if worst is None or spent is None or not request.params.get("max_tokens"):
                raise ConfigurationError(f"--max-cost cannot bound the cost of a call to {self.name}")
            if spent + worst > self.max_cost:
                self.budget_stop = (f"stopped at the budget: ${spent:.4f} spent, and the next call could cost "
                                    f"${worst:.4f} more than --max-cost ${self.max_cost:g} allows")
            elif spent + self._reserved + worst <= self.max_cost:
                self._reserved += worst
                return worst
            else:
                await self._released.wait()  # the calls in flight may cost less than their worst
        raise BudgetReached(self.budget_stop)

    def _release(self, reserved: float) -> None:
        if reserved:
            self._reserved -= reserved
            self._released.set()
            self._released = asyncio.Event()

    def _tenacity_wait(self, state: Any) -> float:
        err = state.outcome.exception()
        if isinstance(err, TransientError) and err.retry_after is not None:
            wait = self._capped(err.retry_after)
            return min(self.max_cooldown, wait + random.uniform(0, 0.1 * max(wait, 0.05)))
        cap = min(self.backoff_max, self.max_cooldown, self.backoff_base * (2 ** (state.attempt_number - 1)))
        return random.uniform(0, cap)  # exponential backoff, full jitter

    def _before_sleep(self, state: Any) -> None:
        self.usage.retries += 1

    def _capped(self, wait: float) -> float:
        """``wait`` bounded by ``max_cooldown``; says once when a server asks for longer."""
        if wait > self.max_cooldown and not self._warned_retry_after:
            self._warned_retry_after = True
            log.warning("%s asks to wait %.0f s (Retry-After); waiting at most %g s (--max-cooldown)",
                        self.provider.name, wait, self.max_cooldown)
        return min(wait, self.max_cooldown)

    def _note_timeout(self, e: RequestTimeout) -> None:
        """Count timeouts, and say at the first what to do: a hung or swamped server is otherwise
        silent for timeout x attempts per call."""
        self.usage.timeouts += 1
        if self.usage.timeouts == 1:
            log.warning("%s: %s (retried; more are counted in the summary). A server with fewer slots "
                        "than the %d calls in flight queues them past the timeout: lower --concurrency "
                        "or raise --timeout", self.provider.name, e, self.concurrency)

    async def _wait_cooldown(self) -> None:
        waited = False
        t0 = time.monotonic()
        while True:
            d = self._cooldown_until - time.monotonic()
            if d <= 0:
                break
            waited = True
            await asyncio.sleep(d)
        if waited:
            self.usage.cooldown_waits += 1
            self.usage.cooldown_wait_s += time.monotonic() - t0

    async def _attempt(self, request: ChatRequest, est: float) -> ChatResult:
        await self._wait_cooldown()
        if self._rpm:
            await self._rpm.acquire(1)
        if self._tpm:
            await self._tpm.acquire(est)
        await self._wait_cooldown()
        self.usage.requests += 1
        try:
            result = await self.provider.complete(request)
        except TransientError as e:
            if e.status == 429:
                self.usage.rate_limited += 1
                cool = self._capped(e.retry_after if e.retry_after is not None else self.default_cooldown)
                if not isinstance(self.provider, ReplicaProvider):  # that cools down its one replica
                    self._cooldown_until = max(self._cooldown_until, time.monotonic() + cool)
            elif isinstance(e, RequestTimeout):
                self._note_timeout(e)
            raise
        if self._tpm:
            self._tpm.adjust(result.tokens_in + result.tokens_out - est)
        return result

    async def _call_with_retries(self, request: ChatRequest) -> ChatResult:
        # The slot comes first, so thousands of queued calls cost next to nothing until their turn;
        # it is given back while the call sleeps between attempts.
        async with _Slot(self._sem) as slot:
            est = self._estimate_tokens(request) if self._tpm else 0.0
            retrying = AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts),
                wait=self._tenacity_wait,
                retry=retry_if_exception_type(TransientError),
                before_sleep=self._before_sleep,
                sleep=slot.sleep,
                reraise=True,
            )
            try:
                return await retrying(self._attempt, request, est)
            except TransientError as e:
                raise type(e)(f"{e} (gave up after {self.max_attempts} attempts)", status=e.status,
                              retry_after=e.retry_after) from e

    @staticmethod
    def _prompt_tokens(request: ChatRequest) -> int:
        """An estimate of a request's prompt tokens (4 characters a token; a bound only roughly)."""
        return sum(len(m.get("content") or "") for m in request.messages) // 4 + 1

    @classmethod
    def _estimate_tokens(cls, request: ChatRequest) -> float:
        return cls._prompt_tokens(request) + float(request.params.get("max_tokens") or 256)

    # ---------------------------------------------------------------- structured outputs
    async def _instructor_create(self, **kwargs: Any) -> Any:
        """openai-style create() for instructor: each attempt is one cached ChatRequest."""
        from openai.types.chat import ChatCompletion

        ctx = _schema_var.get()
        if ctx is None:
            raise RuntimeError("_instructor_create called outside Client.structured")
        base, mode, schema = ctx
        messages = []
        for m in kwargs.get("messages", []):
            c = m.get("content")
            if not isinstance(c, str):  # list-of-parts content -> plain text
                c = "".join(p.get("text", "") for p in (c or []) if isinstance(p, dict))
            messages.append({"role": m["role"], "content": c})
        params = dict(base.params)
        for k, v in kwargs.items():
            if k not in _INSTRUCTOR_DROP and v is not None:
                params[k] = v
        if mode == "json_object":  # the schema also constrains decoding where the server can
            params["response_format"] = {"type": "json_object", "schema": schema}
        # instructor's request says how the schema reaches the model (once): no response_schema
        req = base.model_copy(update={"messages": messages, "params": params, "response_schema": None})
        r = await self.complete(req)
        message: dict[str, Any] = {"role": "assistant", "content": r.text}
        if mode == "tools":  # the provider answers a forced tool call with its arguments
            name = kwargs["tool_choice"]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call-0", "type": "function", "function": {"name": name, "arguments": r.text}}]}
        return ChatCompletion.model_validate({
            "id": "ladder-" + req.key()[:16],
            "object": "chat.completion",
            "created": 0,
            "model": req.model,
            "choices": [{"index": 0, "finish_reason": _openai_finish(r.finish_reason), "message": message}],
            "usage": {"prompt_tokens": r.tokens_in, "completion_tokens": r.tokens_out,
                      "total_tokens": r.tokens_in + r.tokens_out},
        })

    async def structured(self, request: ChatRequest, response_model: type[M], max_retries: int = 2) -> M:
        """Parse the answer into ``response_model``; instructor re-asks on invalid JSON / validation
        errors (at most ``max_retries`` re-asks). Every raw attempt goes through ``complete``.

        Asked in this client's structured mode; with "auto", a mode the server rejects (see
        ``_rejects_mode``) is learned for this client's endpoint, said once, and the call re-sent
        in the next mode."""
        prepared = self._response_models.get(response_model)
        if prepared is None:
            prepared = self._response_models[response_model] = _prepare(response_model)
        wrapper, schema = prepared
        while True:
            mode = self._modes[0]
            create = self._instructors.get(mode)
            if create is None:
                create = self._instructors[mode] = instructor.patch(create=self._instructor_create,
                                                                    mode=STRUCTURED_MODES[mode])
            token = _schema_var.set((request, mode, schema))  # shared by every call: never mutated
            try:
                return await create(model=request.model, messages=[dict(m) for m in request.messages],
                                    response_model=wrapper, max_retries=max_retries)
            except InstructorRetryException as e:
                if not self._rejects_mode(mode, e.__cause__):
                    raise
            finally:
                _schema_var.reset(token)

    def _rejects_mode(self, mode: str, error: BaseException | None) -> bool:
        """Whether ``error`` is the server rejecting structured mode ``mode`` and a weaker one is
        left; then the client's requests use the next mode from now on (learned once)."""
        # a rejection names what it rejects: a 400 for, say, a too long prompt must not cost the mode
        if not isinstance(error, BadRequestError) or not _NAMES_MODE.search(str(error)) or len(self._modes) < 2:
            return False
        if self._modes[0] == mode:  # else a call in flight learned it meanwhile: just re-send
            self._modes.pop(0)
            log.warning("%s/%s at %s rejects structured mode %s (%s); its structured calls use %s from now on",
                        self.provider.name, self.model, self.provider.endpoint or "the provider's API", mode,
                        _first_line(str(error)), self._modes[0])
        return True

    async def aclose(self) -> None:
        await self.provider.aclose()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _prepare(response_model: type[BaseModel]) -> tuple[type[BaseModel], dict[str, Any]]:
    """instructor's wrapper class for ``response_model``, built once, and the model's JSON schema.

    Given a plain model, instructor builds a new wrapper class on every call (a pydantic model
    build of ~1.5 ms); given its wrapper, it uses it as it is. Its JSON mode also regenerates the
    schema for its prompt on every call (~0.35 ms, a third of what a structured call costs here),
    so the wrapper answers ``model_json_schema()`` with the schema made once. instructor only
    serializes it; a test checks it is never changed.
    """
    wrapper = instructor.openai_schema(response_model)
    generate = wrapper.model_json_schema
    once = generate()

    def model_json_schema(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        return once if not args and not kwargs else generate(*args, **kwargs)

    wrapper.model_json_schema = classmethod(model_json_schema)  # type: ignore[method-assign]
    return wrapper, response_model.model_json_schema()


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _openai_finish(reason: str | None) -> str:
    if reason in ("stop", "length", "tool_calls", "content_filter", "function_call"):
        return reason
    if reason == "max_tokens":
        return "length"
    return "stop"


def make_client(
    model: str,
    *,
    base_url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    model_name: str | None = None,
    cache: CallCache | None = None,
    transport: str = "auto",
    timeout: float = 120.0,
    **client_kwargs: Any,
) -> Client:
    """``make_client("openai/gpt-5.4", cache=store, concurrency=32)`` -> Client.

    Several ``base_url``s are replicas of one model (:class:`ReplicaProvider`): ``concurrency`` is
    then each replica's (one int, or one per replica), and the client's is their sum.
    ``model_name``: the name the requests carry (a server's served name), instead of the part of
    ``model`` after the provider. ``api_key_env``: the variable holding this endpoint's key."""
    from .providers import make_provider, parse_model

    provider_name, name = parse_model(model)
    urls = [base_url] if base_url is None or isinstance(base_url, str) else list(base_url)
    providers = [make_provider(provider_name, api_key=api_key, api_key_env=api_key_env, base_url=url,
                               timeout=timeout, transport=transport) for url in urls]
    names = {"model": model_name or name, "name": f"{provider_name}/{name}"}
    if len(providers) == 1:
        return Client(providers[0], cache=cache, **names, **client_kwargs)
    replicas = ReplicaProvider(providers, urls, client_kwargs.pop("concurrency", 64),
                               max_cooldown=client_kwargs.get("max_cooldown", DEFAULT_MAX_COOLDOWN_S))
    return Client(replicas, cache=cache, concurrency=replicas.concurrency, **names, **client_kwargs)


__all__ = ["CallCache", "Client", "MemoryCache", "RateLimiter", "STRUCTURED_MODES", "Usage", "make_client"]
