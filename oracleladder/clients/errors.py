"""Errors raised by providers and the client runner.

Transient errors are retried by :class:`oracleladder.clients.runner.Client`; everything else is raised
at once. Messages never contain API keys.
"""

from __future__ import annotations

import re


class ProviderError(RuntimeError):
    """Base class of every client-layer failure."""

    status: int | None = None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class TransientError(ProviderError):
    """Worth retrying: 429, 5xx, timeouts, dropped connections, malformed bodies."""

    retry_after: float | None = None

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, status=status)
        self.retry_after = retry_after


class RateLimitError(TransientError):
    status = 429


class ServerError(TransientError):
    pass


class RequestTimeout(TransientError):
    pass


class ConnectionDropped(TransientError):
    pass


class MalformedResponse(TransientError):
    pass


class CannotConnect(ConnectionDropped):
    """No connection at all (refused, unknown host): retried, as a server may be starting."""


class PermanentError(ProviderError):
    """Not worth retrying: the same request will fail the same way."""


class AuthenticationError(PermanentError):
    status = 401


class BadRequestError(PermanentError):
    status = 400


class ConfigurationError(ProviderError, ValueError):
    """Bad model string, unknown provider, missing API key."""


class MissingAPIKey(ConfigurationError):
    def __init__(self, provider: str, env_var: str) -> None:
        super().__init__(
            f"no API key for provider {provider!r}: set the environment variable {env_var} "
            f"(or pass api_key=...)"
        )
        self.env_var = env_var


class UnknownProvider(ConfigurationError):
    def __init__(self, provider: str, known: list[str]) -> None:
        super().__init__(f"unknown provider {provider!r}; known providers: {', '.join(known)}")
        self.known = known


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent/unparsable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import email.utils
        import time

        dt = email.utils.parsedate_to_datetime(value)
        return max(0.0, dt.timestamp() - time.time())
    except Exception:
        return None


# A 5xx whose body says the server's validation refused the request (llama-cpp-python's server
# answers an unknown response_format type with HTTP 500 and "1 validation error"): a rejection
# the same request meets every time, never worth a retry.
_REJECTION = re.compile(r"validation error|response_format|tool_choice", re.IGNORECASE)


def classify_status(status: int, message: str, retry_after: float | None = None, body: str = "") -> ProviderError:
    """Map an HTTP status (and the body's words, for a 5xx that is a rejection) to the right error class."""
    if status == 429:
        return RateLimitError(message, status=status, retry_after=retry_after)
    if status >= 500 and _REJECTION.search(body):
        return BadRequestError(message, status=status)
    if status in (408, 409) or status >= 500:
        return ServerError(message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return AuthenticationError(message, status=status)
    return BadRequestError(message, status=status)


def explain(error: BaseException, *, provider: str, base_url: str | None, key_env: str | None) -> str:
    """One line: what went wrong with an endpoint, and what to do about it.

    ``key_env`` is the variable this endpoint's key comes from (None: the endpoint gets no key)."""
    where = (base_url or "").rstrip("/") or f"the {provider} API"
    status = getattr(error, "status", None)
    if isinstance(error, CannotConnect):
        return f"cannot connect to {where}: is the server running, and is --base-url right?"
    if status in (401, 403):
        if key_env is None:
            return (f"{where} wants a key (HTTP {status}): put it in an environment variable and name "
                    f"that with --api-key-env NAME")
        return f"{where} refused the key in {key_env} (HTTP {status}): set {key_env} to a key it accepts"
    if status == 404 and base_url:
        if provider == "anthropic":
            return (f"{where}/v1/messages not found (HTTP 404): this server does not speak the Anthropic "
                    f"format; for an OpenAI-compatible server use openai/MODEL")
        if not where.endswith("/v1"):
            return f"{where}/chat/completions not found (HTTP 404): did you mean {where}/v1 ?"
        return f"{where}/chat/completions: {error} (check the model name: --model-name)"
    return " ".join(str(error).split())
