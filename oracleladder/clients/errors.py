"""Errors raised by providers and the client runner.

Transient errors are retried by :class:`oracleladder.clients.runner.Client`; everything else is raised
at once. Messages never contain API keys: every message is passed through :func:`scrub`.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from .registry import key_variables, wire

REDACTED = "[REDACTED]"
_secrets: set[str] = set()
# key-shaped text: OpenAI/Anthropic keys (sk-..., sk-proj-..., sk-ant-...), bearer tokens, and long
# tokens mixing letters and digits (gateways' own keys); error text loses nothing useful by it
_KEY_SHAPED = re.compile(r"sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._~+/=\-]+|[A-Za-z0-9_\-]{32,}")
# the password of a URL's user (http://user:password@host/): shown as http://user:[REDACTED]@host/
_URL_PASSWORD = re.compile(r"(?<=://)([^/?#@\s:]*):[^/?#@\s]*@")


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from every error message from now on (providers register the key they use)."""
    if value and len(value) >= 4:
        _secrets.add(value)


def _redact_shaped(m: re.Match[str]) -> str:
    token = m.group(0)
    if token.startswith(("sk-", "Bearer")):
        return REDACTED
    has_letter = any(c.isalpha() for c in token)
    return REDACTED if has_letter and any(c.isdigit() for c in token) else token


def scrub(text: str) -> str:
    """``text`` without any configured key (registered, or the value of a provider's key variable,
    even when not the key in use: ``registry.key_variables``),
    a URL's password, nor anything shaped like a key. Error bodies pass through here before they are
    stored or printed, and so does every URL shown (a base URL may hold a user and password)."""
    known = _secrets | {v for v in (os.environ.get(n) for n in key_variables()) if v and len(v) >= 4}
    for secret in sorted(known, key=len, reverse=True):  # longest first: a key containing another
        text = text.replace(secret, REDACTED)
    text = _URL_PASSWORD.sub(rf"\1:{REDACTED}@", text)
    return _KEY_SHAPED.sub(_redact_shaped, text)


class ProviderError(RuntimeError):
    """Base class of every client-layer failure."""

    status: int | None = None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(scrub(message))
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


class EmptyCompletion(TransientError):
    """A server's 200 whose answer is empty: no visible text (``""``, null, or whitespace) and no
    tool call, though the model was not cut off by its token budget. It is an outage (an overloaded
    server, a provider hiccup), not an answer: retried, and if it persists a failed call, never
    cached as a success. An empty text with finish reason ``length`` is not one: a reasoning model that spent
    its whole budget thinking was truncated, and that is its answer (graded as such). Neither is
    the in-process ``local`` model's empty text: it has no outage, and it would say the same again."""


class CannotConnect(ConnectionDropped):
    """No connection at all (refused, unknown host): retried, as a server may be starting."""


class EndpointLost(CannotConnect):
    """A call not sent: its endpoint stopped answering mid-run (``Client.lost``), and every call would
    fail the same way."""


class PermanentError(ProviderError):
    """Not worth retrying: the same request will fail the same way."""


class AuthenticationError(PermanentError):
    status = 401


class BadRequestError(PermanentError):
    status = 400


class ContentRefused(PermanentError):
    """The provider would not answer: its safety filter blocked the prompt or the reply (Gemini's
    finish reason SAFETY, ...). The same request is refused again: a failed call, never an answer."""


class FunctionFailed(PermanentError):
    """A Python function as a model (``clients.function``) raised, or returned no text: a failed
    call, never an answer."""


class FunctionTimeout(FunctionFailed):
    """A model function ran past its endpoint's timeout: cancelled (async) or abandoned (a thread
    cannot be stopped), and not retried, as a retry would leave one more hung thread behind."""


class InvalidUsage(PermanentError):
    """A reply whose usage is no count of tokens (negative, not finite, past ``usage.MAX_TOKENS``,
    not a number): the server's count cannot be believed, so neither can its answer. A failed call,
    counted at its bound (``Client``); not retried, as the server would say the same again and every
    attempt is paid."""


class BudgetReached(ProviderError):
    """A call refused before it is sent: spend plus the calls in flight could pass the budget (max_cost)."""


@dataclass(frozen=True)
class Arg:
    """An argument an error names, said as each surface spells it: the Python API ``max_tokens=256``,
    the CLI ``--max-tokens 256``. ``flag``: the CLI's option where it is not the argument's name
    (``set_name``: ``--set``)."""

    name: str
    value: object = None
    flag: str | None = None

    def python(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value!r}"

    def cli(self) -> str:
        flag = self.flag or "--" + self.name.replace("_", "-")
        return flag if self.value is None or self.value is True else f"{flag} {self.value}"  # a switch: its flag


class Spelled(Exception):
    """An error whose message names arguments: its ``parts`` are text and the arguments (`Arg`);
    ``str()`` says them as Python does, `cli_message` as the CLI does."""

    def __init__(self, *parts: str | Arg) -> None:
        self.parts = parts
        super().__init__("".join(p if isinstance(p, str) else p.python() for p in parts))

    def cli_message(self) -> str:
        return "".join(p if isinstance(p, str) else p.cli() for p in self.parts)


class ConfigurationError(Spelled, ProviderError, ValueError):
    """Bad model string, unknown provider, missing API key, options that cannot be used together."""

    def cli_message(self) -> str:
        return scrub(super().cli_message())  # as every ProviderError's message: it may quote a key


class MissingAPIKey(ConfigurationError):
    def __init__(self, provider: str, env_var: str) -> None:
        super().__init__(
            f"no API key for provider {provider!r}: set the environment variable {env_var}"
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


# the SDKs' HTTP layer's names for a connection never made (refused, unknown host, connect timeout)
_CONNECT_ERRORS = ("ConnectError", "ConnectTimeout")


def sdk_error(sdk: Any, e: Exception, name: str) -> ProviderError:
    """The error for an exception of the OpenAI or the Anthropic SDK ``sdk`` (same class names)."""
    if isinstance(e, sdk.APIConnectionError) and type(e.__cause__).__name__ in _CONNECT_ERRORS:
        return CannotConnect("cannot connect")  # no connection at all, as opposed to one dropped or slow
    if isinstance(e, sdk.APITimeoutError):  # before APIConnectionError, its base class
        return RequestTimeout("request timed out")
    if isinstance(e, sdk.APIStatusError):
        ra = parse_retry_after(e.response.headers.get("retry-after")) if e.response is not None else None
        return classify_status(e.status_code, f"{name} HTTP {e.status_code}: {excerpt(str(e), 300)}", ra, body=str(e))
    if isinstance(e, sdk.APIConnectionError):
        return ConnectionDropped(f"connection failed: {type(e).__name__}")
    return MalformedResponse(f"malformed body: {type(e).__name__}")


def genai_error(sdk_errors: Any, e: Exception, name: str) -> ProviderError:
    """The error for an exception of Google's SDK (``sdk_errors``: ``google.genai.errors``), its HTTP
    layer's (httpx2: known by its class names, as the other SDKs' are) or a body it cannot read."""
    if isinstance(e, sdk_errors.APIError):
        headers = getattr(e.response, "headers", None) or {}
        ra = parse_retry_after(headers.get("retry-after"))
        return classify_status(e.code, f"{name} HTTP {e.code}: {excerpt(str(e), 300)}", ra, body=str(e))
    kinds = {c.__name__ for c in type(e).__mro__}
    if kinds & set(_CONNECT_ERRORS):
        return CannotConnect("cannot connect")
    if "TimeoutException" in kinds:
        return RequestTimeout("request timed out")
    if "TransportError" in kinds:
        return ConnectionDropped(f"connection failed: {type(e).__name__}")
    return MalformedResponse(f"malformed body: {type(e).__name__}")


def function_error(e: BaseException, name: str) -> ProviderError:
    """The error for an exception the model function ``name`` raised: a timeout or a dropped
    connection (a function that asks a server of its own) is retried as a provider's is; any other
    exception, SystemExit and KeyboardInterrupt included, is a failed call."""
    message = f"{name} raised {type(e).__name__}: {excerpt(str(e), 300)}"
    if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        return RequestTimeout(message)
    if isinstance(e, ConnectionError):
        return ConnectionDropped(message)
    return FunctionFailed(message)


def excerpt(text: str, n: int = 200) -> str:
    """The first ``n`` characters of an error body, scrubbed of keys before it is cut (a key cut in
    two would no longer be recognized)."""
    s = scrub(text[: 8 * n])
    return s if len(s) <= n else s[:n] + "..."


def endpoint_failure(error: BaseException) -> bool:
    """True when no request to this endpoint can succeed (no connection, a refused key, a wrong
    URL): a run stops at once with ``explain``'s line rather than failing each of its jobs."""
    return isinstance(error, CannotConnect) or getattr(error, "status", None) in (401, 403, 404)


def explain(error: BaseException, *, provider: str, base_url: str | None, key_env: str | None) -> str:
    """One line: what went wrong with an endpoint, and what to do about it.

    ``key_env`` is the variable this endpoint's key comes from (None: the endpoint gets no key)."""
    where = scrub(base_url or "").rstrip("/") or f"the {provider} API"
    status = getattr(error, "status", None)
    if isinstance(error, CannotConnect):
        return f"cannot connect to {where}: is the server running, and is --base-url right?"
    if status in (401, 403):
        if key_env is None:
            return (f"{where} wants a key (HTTP {status}): put it in an environment variable and name "
                    f"that with --api-key-env NAME")
        return f"{where} refused the key in {key_env} (HTTP {status}): set {key_env} to a key it accepts"
    not_found = wire(provider).not_found
    if status == 404 and base_url and not_found is not None:
        return not_found(error, where)
    return " ".join(str(error).split())
