"""What the model costs: USD per million tokens, per model, overridable in the config.

`[prices."<model>"]` in the TOML file adds or replaces an entry (`input`, `output`,
and optionally `cache_read` / `cache_write`, which default to Anthropic's ratios:
0.1x and 1.25x the input price for 5-minute cache writes). A dated snapshot name
(`claude-sonnet-4-5-20250929`) finds its family's entry by prefix. A model with no
entry has no price: its cost is shown as unknown, never as zero. The list prices
are in the capability map (config/models.py, `DEFAULT_PRICES`).
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


def price_of(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The entry for `model`: exact, else the entry it names with a snapshot suffix
    (`-20250929`, `-latest`), or for a cloud's model id, Anthropic's name's (unless the
    table has the cloud's name). Only that: `claude-opus-4-6` is not `claude-opus-4`."""
    if model in table:
        return table[model]
    if cloud_name(model) != model:  # Claude on Vertex or Bedrock: Anthropic's list price
        return price_of(cloud_name(model), table)
    base, _, suffix = model.rpartition("-")
    if base in table and (suffix == "latest" or _SNAPSHOT.match(suffix)):
        return table[base]
    return None


_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.(?P<name>.+?)(?:-v\d+(?::\d+)?)?$")


def cloud_name(model: str) -> str:
    """Anthropic's name of a cloud's Claude model id: `vertex:claude-sonnet-5@20260101`
    and `bedrock:us.anthropic.claude-sonnet-5-v1:0` are `claude-sonnet-5`; any other
    model is itself."""
    if model.startswith("vertex:"):
        return model.removeprefix("vertex:").partition("@")[0]
    match = _BEDROCK.match(model.removeprefix("bedrock:")) if model.startswith("bedrock:") else None
    return match["name"] if match else model
