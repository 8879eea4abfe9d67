"""The Python API's own errors; each message says, in one line, what to do."""

from __future__ import annotations

from ..clients.errors import Arg, ConfigurationError, spelled

__all__ = ["Arg", "EndpointError", "ExperimentError"]


class ExperimentError(ValueError):
    """What was asked cannot be done with this store or these options; the message says what to do.
    Its ``parts`` are text and the arguments it names (`Arg`): ``str()`` says them as Python does,
    `cli_message` as the CLI does."""

    def __init__(self, *parts: str | Arg) -> None:
        self.parts = parts
        super().__init__(spelled(parts, cli=False))

    def cli_message(self) -> str:
        return spelled(self.parts, cli=True)


class EndpointError(ConfigurationError):
    """The client of an endpoint cannot be made (bad model string, missing key, no price for max_cost)."""
