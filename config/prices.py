"""What the model costs: USD per million tokens, per model, overridable in the config.

`[prices."<model>"]` in the TOML file adds or replaces an entry (`input`, `output`,
and optionally `cache_read` / `cache_write`, which default to Anthropic's ratios:
0.1x and 1.25x the input price for 5-minute cache writes). A dated snapshot name
(`claude-sonnet-4-5-20250929`) finds its family's entry by prefix. A model with no
entry has no price: its cost is shown as unknown, never as zero.
Imports nothing of the project.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, Field, model_validator

_SNAPSHOT = re.compile(r"^\d{8}$")
CACHE_READ_RATIO = 0.1
CACHE_WRITE_RATIO = 1.25


class ModelPrice(BaseModel):
    """USD per million tokens of each kind."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _cache_defaults(self) -> ModelPrice:
        if self.cache_read is None:
            self.cache_read = round(self.input * CACHE_READ_RATIO, 6)
        if self.cache_write is None:
            self.cache_write = round(self.input * CACHE_WRITE_RATIO, 6)
        return self

    def cost(self, input: int, output: int, cache_read: int, cache_write: int) -> float:
        """Dollars for one call's token counts."""
        assert self.cache_read is not None and self.cache_write is not None
        per_token = (
            input * self.input
            + output * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        )
        return per_token / 1_000_000


def _p(input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, output=output)


#: Anthropic's list prices (USD per million tokens, standard API, 5-minute cache writes)
#: as published in Nov 2026. A model not listed is priced in the config
#: (`[prices."<model>"]`) until this table learns it; until then its cost is unknown.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-sonnet-5": _p(2.0, 10.0),
    "claude-opus-5": _p(5.0, 25.0),
    "claude-fable-5": _p(10.0, 50.0),
    "claude-mythos-5": _p(10.0, 50.0),
    "claude-opus-4-8": _p(5.0, 25.0),
    "claude-opus-4-7": _p(5.0, 25.0),
    "claude-opus-4-6": _p(5.0, 25.0),
    "claude-sonnet-4-6": _p(3.0, 15.0),
    "claude-opus-4-5": _p(5.0, 25.0),
    "claude-opus-4-1": _p(15.0, 75.0),
    "claude-opus-4": _p(15.0, 75.0),
    "claude-sonnet-4-5": _p(3.0, 15.0),
    "claude-sonnet-4": _p(3.0, 15.0),
    "claude-3-7-sonnet": _p(3.0, 15.0),
    "claude-3-5-sonnet": _p(3.0, 15.0),
    "claude-haiku-4-5": _p(1.0, 5.0),
    "claude-3-5-haiku": _p(0.8, 4.0),
    "claude-3-haiku": _p(0.25, 1.25),
}


def price_of(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The entry for `model`: exact, else the entry it names with a snapshot suffix
    (`-20250929`, `-latest`). Only that: `claude-opus-4-6` is not `claude-opus-4`."""
    if model in table:
        return table[model]
    base, _, suffix = model.rpartition("-")
    if base in table and (suffix == "latest" or _SNAPSHOT.match(suffix)):
        return table[base]
    return None
