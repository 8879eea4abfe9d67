"""Async LLM client layer: providers (openai, anthropic, OpenAI-compatible base_url, local) and the
shared runner (``runner.Client``) composed of its concerns: ``cache``, ``limits``, ``retry``, ``usage``
and ``structured`` outputs."""

from .base import ChatRequest, ChatResult, Provider
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
from .providers import (
    KNOWN_PROVIDERS,
    AnthropicProvider,
    OpenAIProvider,
    OpenAIRawProvider,
    make_provider,
    parse_model,
)
from .prices import DEFAULT_PRICES, PriceTable, load_prices
from .cache import CallCache, MemoryCache
from .limits import RateLimiter
from .runner import Client, make_client
from .structured import STRUCTURED_MODES, StructuredOutputError
from .usage import Usage

__all__ = [
    "ChatRequest", "ChatResult", "Provider", "AuthenticationError", "BadRequestError", "CannotConnect",
    "ConfigurationError", "EmptyCompletion", "MissingAPIKey", "PermanentError", "ProviderError", "RateLimitError",
    "TransientError", "UnknownProvider", "KNOWN_PROVIDERS", "AnthropicProvider", "OpenAIProvider",
    "OpenAIRawProvider", "make_provider", "parse_model", "DEFAULT_PRICES", "PriceTable", "load_prices", "BudgetReached", "STRUCTURED_MODES", "CallCache", "Client",
    "MemoryCache", "RateLimiter", "StructuredOutputError", "Usage", "make_client",
]
