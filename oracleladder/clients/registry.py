"""The provider wires, each declared once: a wire module ends with ``WIRE = ProviderSpec(...)``, and
``WIRES`` names that module by its path under the provider's name (lm-eval's ``register_model``,
inspect_ai's ``@modelapi``). Everything the toolkit knows of a provider (its key variables, its own
API's URL, its provider and batch factories, its structured modes, what an HTTP 404 at a server of
one's own means) is read from its declaration; no other module names a provider.

A wire module is loaded when its provider is first asked for (``wire``), so `ladder --help` loads no
SDK, and a wire that needs an optional extra costs nothing to those who never name it.

Adding a provider: its module (the Provider, its batch API if it has one, its ``WIRE``) and its line
in ``WIRES``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._lazy import load

if TYPE_CHECKING:
    from .base import ChatRequest, Provider

# provider name (the part of a model string before its first "/") -> the module declaring its WIRE
WIRES: dict[str, str] = {
    "openai": "oracleladder.clients.openai_api",
    "anthropic": "oracleladder.clients.anthropic_api",
    "google": "oracleladder.clients.google_api",
    "local": "oracleladder.clients.local",
    "python": "oracleladder.clients.function",
    "fake": "oracleladder.clients.fake",
    "inspect": "oracleladder.clients.inspect_api",
}


@dataclass(frozen=True)
class ProviderModes:
    """How a provider's structured calls are asked: instructor's name of the provider (an
    ``instructor.Provider`` member); each mode's name here and instructor's (an ``instructor.Mode``
    member), strongest first, with a line on what it sends; and ``reply``, a stored reply (its text,
    its request, its finish reason) as the provider's SDK returns it, for instructor's re-ask."""

    provider: str
    modes: dict[str, tuple[str, str]]
    reply: Callable[[str, ChatRequest, str | None], Any]


@dataclass(frozen=True)
class Connection:
    """What a provider (or its batch API) is made of: the key (given, or the variable naming it), the
    server (None: the provider's own API), the seconds a request may take; for OpenAI's wire the
    transport (``"sdk"``, ``"aiohttp"``, ``"auto"``), for a python/NAME model its function; ``model``:
    the model string after the provider (an inspect/ model's ``PROVIDER/MODEL``)."""

    timeout: float
    api_key: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    transport: str = "auto"
    function: Callable[..., Any] | None = None
    model: str | None = None


@dataclass(frozen=True)
class ProviderSpec:
    """One provider wire, declared in its module.

    ``name``: the provider of a model string (``name/MODEL``). ``provider``: makes its Provider.
    ``modes``: its structured modes. ``key_env``: the variables its key is read from at its own
    API, the first that is set (none: it takes no key). ``base_url``: its own API (None: it runs in
    this process and has no server). ``base_url_env``: the variable a base URL is read from when none
    is given. ``call_path``: the path each call adds to a base URL (a URL given with it is cut).
    ``batch``: makes its batch API (None: it has none). ``not_found``: the line for an HTTP 404 at a
    server of one's own (its URL given), else the error as it is. ``default_model``: the model a bare
    ``name`` asks (None: a name needs a model). ``function``: a python/NAME model's Python function.
    ``free``: what runs it, when its calls cost nothing whatever the price table says (a Python
    function, a script)."""

    name: str
    provider: Callable[[Connection], Provider]
    modes: ProviderModes
    key_env: tuple[str, ...] = ()
    base_url: str | None = None
    base_url_env: str | None = None
    call_path: str | None = None
    batch: Callable[[Connection], Any] | None = None  # a batch_api.BatchAPI
    not_found: Callable[[BaseException, str], str] | None = None
    default_model: str | None = None
    function: bool = False
    free: str | None = None


def wire(name: str) -> ProviderSpec:
    """The declaration of the provider ``name`` (one of ``WIRES``), its module loaded now."""
    spec: ProviderSpec = load(f"{WIRES[name]}:WIRE")
    if spec.name != name:
        raise RuntimeError(f"{WIRES[name]} declares {spec.name!r}, registered as {name!r}")
    return spec


def key_variables() -> set[str]:
    """Every variable a registered provider reads its key from (their values are scrubbed from
    every message)."""
    return {env for name in WIRES for env in wire(name).key_env}
