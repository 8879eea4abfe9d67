"""The Python API's own errors; each message says, in one line, what to do."""

from __future__ import annotations

from ..clients.errors import Arg, ConfigurationError, Spelled

__all__ = ["Arg", "EndpointError", "ExperimentError"]


class ExperimentError(Spelled, ValueError):
    """What was asked cannot be done with this store or these options; the message says what to do,
    naming each argument as the caller spells it (`Arg`)."""


class EndpointError(ConfigurationError):
    """The client of an endpoint cannot be made (bad model string, missing key, no price for max_cost)."""
