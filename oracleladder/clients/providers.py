"""A provider and its endpoint: which provider a model string names, its Provider and batch API
(``make_provider``, ``make_batch_api``, from its declaration in ``registry``), the endpoint a call key
names, the key an endpoint gets, and how many requests its server runs at once (``server_capacity``).

API keys are held only by the wire objects: never logged, never put in a ChatRequest.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._lazy import lazy_module
from .errors import Arg, ConfigurationError, MissingAPIKey, UnknownProvider, register_secret
from .registry import WIRES, Connection, wire

if TYPE_CHECKING:
    import aiohttp

    from .base import Provider
else:  # loaded by the first request, not by `ladder --help` (0.2 to 0.5 s on a loaded 2-core machine)
    aiohttp = lazy_module("aiohttp")

KNOWN_PROVIDERS = list(WIRES)
DEFAULT_TIMEOUT_S = 120.0
TRANSPORTS = ("auto", "sdk", "aiohttp")


def parse_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-5.4" -> ("openai", "gpt-5.4")``; ``"local" -> ("local", default model)``.

    Only the first ``/`` splits, so ``"openai/meta-llama/Llama-3-8B"`` keeps the HF-style model id.
    """
    model = (model or "").strip()
    if not model:
        raise UnknownProvider("", KNOWN_PROVIDERS)
    provider, sep, name = model.partition("/")
    provider = provider.lower()
    if provider not in WIRES:
        raise UnknownProvider(provider, KNOWN_PROVIDERS)
    if not name:
        default = wire(provider).default_model
        if default is not None:
            return provider, default
        raise UnknownProvider(f"{model} (no model name after '{provider}/')", KNOWN_PROVIDERS)
    return provider, name


def make_provider(provider: str, *, api_key: str | None = None, api_key_env: str | None = None,
                  base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, transport: str = "auto",
                  function: Any = None, model: str | None = None) -> Provider:
    """The Provider of ``provider`` (a name of ``registry.WIRES``), made by its wire's declaration.

    OpenAI's transports: ``"sdk"`` (the official SDK), ``"aiohttp"`` (bare aiohttp, about a third of
    the SDK's CPU per call), or ``"auto"``: aiohttp for an OpenAI-compatible server (``base_url``),
    where a fast local server makes the client's CPU the bottleneck, the SDK for OpenAI itself.
    ``function``: a python/NAME model's function (``clients.function``); ``model``: the model
    string after the provider (``inspect/``'s ``PROVIDER/MODEL``)."""
    provider = provider.lower()
    if provider not in WIRES:
        raise UnknownProvider(provider, KNOWN_PROVIDERS)
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; known: {', '.join(TRANSPORTS)}")
    return wire(provider).provider(Connection(timeout, api_key, api_key_env, base_url, transport, function, model))


def make_batch_api(provider: str, *, api_key: str | None = None, api_key_env: str | None = None,
                   base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    """The batch API (a ``batch_api.BatchAPI``) of ``provider``; ConfigurationError when it has none."""
    make = wire(provider).batch
    if make is None:
        having = ", ".join(name + "/" for name in WIRES if wire(name).batch is not None)
        raise ConfigurationError(Arg("batch", True), f": {provider} has no batch API (batch mode is for {having} "
                                 "models); run without ", Arg("batch", True))
    return make(Connection(timeout, api_key, api_key_env, base_url))


def normalize_base_url(url: str) -> str:
    """``HTTP://Host:80/v1/`` -> ``http://host/v1``: one spelling per server, for the call key."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = (parts.hostname or "").lower()
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(scheme):
        netloc += f":{parts.port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def endpoint_of(provider: str, base_url: str | None) -> str | None:
    """The endpoint a call key names: None for the provider's own default (keys stay as they were)."""
    if base_url is None:
        return None
    url = normalize_base_url(base_url)
    own = wire(provider).base_url
    return None if own is not None and url == normalize_base_url(own) else url


def resolve_key(provider: str, api_key: str | None, base_url: str | None, api_key_env: str | None) -> str | None:
    """This endpoint's key: ``api_key``, else the variable ``api_key_env`` names, else the
    provider's own variable (its declaration's ``key_env``), but only for the provider's own host: a
    key is never handed to another server unless the user names it for that server.
    None: send no key at all (an OpenAI-compatible server that needs none)."""
    if api_key:
        register_secret(api_key)  # some gateways echo the key in their error bodies
        return api_key
    env = key_env_for(provider, base_url, api_key_env)
    if env is None:
        return None
    key = os.environ.get(env)
    if not key:
        raise MissingAPIKey(provider, env)
    register_secret(key)
    return key


def connection_key(provider: str, connection: Connection) -> str | None:
    """The key a wire made of ``connection`` sends (``resolve_key``)."""
    return resolve_key(provider, connection.api_key, connection.base_url, connection.api_key_env)


def key_env_for(provider: str, base_url: str | None, api_key_env: str | None) -> str | None:
    """The variable this endpoint's key comes from: the one named, else the provider's own for its
    own host, else none."""
    if api_key_env:
        return api_key_env
    spec = wire(provider)
    elsewhere = base_url is not None and urlsplit(base_url.strip()).hostname != urlsplit(spec.base_url or "").hostname
    if not spec.key_env or elsewhere:
        return None
    return next((env for env in spec.key_env if os.environ.get(env)), spec.key_env[0])


@dataclass(frozen=True)
class Capacity:
    """What a server says of the requests it runs at once: ``slots`` (None: it batches many, and does
    not say how many), and where it says it (``source``)."""

    slots: int | None
    source: str


async def server_capacity(base_url: str, timeout: float = 5.0) -> Capacity | None:
    """How many requests the server at ``base_url`` runs at once, where it says: llama.cpp's
    ``/props`` (``total_slots``), SGLang's ``/get_server_info`` (``max_running_requests``),
    llama-cpp-python's server (its ``/openapi.json``: one at a time, behind one lock), vLLM (its
    ``/v1/models``: it batches, without saying how many). None when it does not say (Ollama,
    gateways, OpenAI), or cannot be reached within ``timeout`` seconds in all."""
    try:
        return await asyncio.wait_for(_capacity(base_url), timeout)
    except (aiohttp.ClientConnectionError, asyncio.TimeoutError):  # no server there (yet): the first call says
        return None


async def _capacity(base_url: str) -> Capacity | None:
    root = base_url.rstrip("/").removesuffix("/v1")
    async with aiohttp.ClientSession() as session:
        props = await _get_json(session, root + "/props")
        if slots := _positive(props, "total_slots"):
            return Capacity(slots, "llama.cpp's /props")
        info = await _get_json(session, root + "/get_server_info")
        states = info.get("internal_states") if isinstance(info, dict) else None
        sglang = _positive(info, "max_running_requests") or _positive((states or [None])[0], "max_running_requests")
        if sglang:
            return Capacity(sglang, "SGLang's /get_server_info")
        api = await _get_json(session, root + "/openapi.json")
        about = api.get("info") if isinstance(api, dict) else None
        if isinstance(about, dict) and "llama.cpp Python" in str(about.get("title")):
            return Capacity(1, "llama-cpp-python's server, by its /openapi.json")
        models = await _get_json(session, base_url.rstrip("/") + "/models")
        listed = models.get("data") if isinstance(models, dict) else None
        if isinstance(listed, list) and any(isinstance(m, dict) and m.get("owned_by") == "vllm" for m in listed):
            return Capacity(None, "vLLM, by its /v1/models")
    return None


async def _get_json(session: aiohttp.ClientSession, url: str) -> object:
    """The JSON body of ``GET url``; None when it is not a 200 or not JSON (a connection that fails raises)."""
    try:
        async with session.get(url) as resp:
            return await resp.json(content_type=None) if resp.status == 200 else None
    except (aiohttp.ClientResponseError, aiohttp.ClientPayloadError, ValueError):
        return None


def _positive(data: object, field: str) -> int | None:
    value = data.get(field) if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
