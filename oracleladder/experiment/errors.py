"""The Python API's own errors; each message says, in one line, what to do."""

from __future__ import annotations

from dataclasses import dataclass

from ..clients import ConfigurationError


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


class ExperimentError(ValueError):
    """What was asked cannot be done with this store or these options; the message says what to do.
    Its ``parts`` are text and the arguments it names (`Arg`): ``str()`` says them as Python does,
    `cli_message` as the CLI does."""

    def __init__(self, *parts: str | Arg) -> None:
        self.parts = parts
        super().__init__("".join(p if isinstance(p, str) else p.python() for p in parts))

    def cli_message(self) -> str:
        return "".join(p if isinstance(p, str) else p.cli() for p in self.parts)


class EndpointError(ConfigurationError):
    """The client of an endpoint cannot be made (bad model string, missing key, no price for max_cost)."""
