"""Prices as data: the package's table (oracleladder/data/prices.json, with the date it was taken),
which a user's file of the same format overrides model by model (``--prices FILE``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import Arg, ConfigurationError

PACKAGE_PRICES = resources.files("oracleladder.data") / "prices.json"


class ModelPrice(BaseModel):
    """USD per 1M tokens; the batch prices default to the table's batch discount of the online ones."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    batch_input: float | None = Field(default=None, ge=0)
    batch_output: float | None = Field(default=None, ge=0)


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    date: str
    note: str = ""
    batch_discount: float = Field(default=0.5, gt=0, le=1)
    models: dict[str, ModelPrice]


@dataclass(frozen=True)
class PriceTable:
    """Per ``provider/model``: (online in, online out, batch in, batch out), USD per 1M tokens."""

    name: str  # where the prices come from and their date, as a run's summary names them
    models: dict[str, tuple[float, float, float, float]]

    def cost(self, model: str, tokens_in: int, tokens_out: float, *, batch: bool = False) -> float | None:
        """USD for one call of ``model`` (``provider/model``) at the price paid; None if unknown."""
        p = self.models.get(model)
        if p is None:
            return None
        pin, pout = (p[2], p[3]) if batch else (p[0], p[1])
        return (tokens_in * pin + tokens_out * pout) / 1e6


def _read(text: str, where: str) -> _PriceFile:
    try:
        return _PriceFile.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise ConfigurationError(f"{where}: not a price table ({' '.join(first[:3])})") from None


def _entries(table: _PriceFile) -> dict[str, tuple[float, float, float, float]]:
    d = table.batch_discount
    return {name: (p.input, p.output,
                   p.input * d if p.batch_input is None else p.batch_input,
                   p.output * d if p.batch_output is None else p.batch_output)
            for name, p in table.models.items()}


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The package's table, overridden model by model by the file at ``path`` if given."""
    base = _read(PACKAGE_PRICES.read_text(encoding="utf-8"), "oracleladder/data/prices.json")
    models, name = _entries(base), f"package prices of {base.date}"
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(Arg("path", str(p), flag="--prices"), f": cannot be read ({exc.strerror or exc})") from None
        user = _read(text, str(p))
        models.update(_entries(user))
        name = f"{p.name} of {user.date} over the {name}"
    return PriceTable(name, models)


DEFAULT_PRICES = load_prices()
