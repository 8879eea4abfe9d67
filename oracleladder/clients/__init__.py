"""Async LLM client layer: one module per provider wire (``openai_api``: OpenAI through its SDK,
``anthropic_api``: Anthropic through its SDK, ``google_api``: Gemini through its SDK,
``compatible``: OpenAI-compatible servers over aiohttp, ``local``: the embedded model, ``function``:
a Python function, ``fake``: answers scripted in a file), each with its online API, its batch API
where the wire has one, and its declaration (``WIRE``), registered by name in ``registry``; the batch
scheduler (``batch``); and the shared runner (``runner.Client``) composed of its concerns: ``cache``,
``limits``, ``retry``, ``usage`` and ``structured`` outputs."""

from .anthropic_api import AnthropicProvider
from .base import ChatRequest, ChatResult, Provider
from .cache import CallCache, MemoryCache
from .compatible import OpenAIRawProvider
from .errors import (
    AuthenticationError,
    BadRequestError,
    BudgetReached,
    CannotConnect,
    ConfigurationError,
    EmptyCompletion,
    MissingAPIKey,
    PermanentError,
    ProviderError,
    RateLimitError,
    TransientError,
    UnknownProvider,
)
from .limits import RateLimiter
from .openai_api import OpenAIProvider
from .prices import DEFAULT_PRICES, PriceTable, load_prices
from .providers import KNOWN_PROVIDERS, key_env_for, make_provider, parse_model, server_capacity
from .registry import ProviderSpec, wire
from .runner import Client, make_client
from .structured import StructuredOutputError
from .usage import Usage, prompt_bound

__all__ = [
    "ChatRequest", "ChatResult", "Provider", "AuthenticationError", "BadRequestError", "CannotConnect",
    "ConfigurationError", "EmptyCompletion", "MissingAPIKey", "PermanentError", "ProviderError", "RateLimitError",
    "TransientError", "UnknownProvider", "KNOWN_PROVIDERS", "AnthropicProvider", "OpenAIProvider",
    "OpenAIRawProvider", "make_provider", "parse_model", "key_env_for", "server_capacity", "DEFAULT_PRICES",
    "PriceTable", "load_prices", "BudgetReached", "ProviderSpec", "wire", "CallCache", "Client", "MemoryCache",
    "RateLimiter", "StructuredOutputError", "Usage", "make_client", "prompt_bound",
]
