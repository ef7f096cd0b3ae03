"""Settings of the tools that act: `[[mcp_servers]]` entries of the config file.

Imports nothing of the project. Values in `env` and `headers` may name environment
variables (`"${OPS_TOKEN}"`), so secrets stay out of the file; `interpolate` fills
them in from the environment the entry point read, and a missing one is a
settings error naming the variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

_SERVER_NAME = re.compile(r"^[A-Za-z0-9-]{1,32}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpServerConfig(BaseModel):
    """One `[[mcp_servers]]` entry: a stdio command or a streamable-HTTP url."""

    name: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    agents: list[str] = Field(default_factory=lambda: ["*"])
    approval: list[str] = Field(default_factory=list)
    #: tools that can carry data out (a mail, a post): `true` for all, or name globs; once
    #: untrusted content is in a conversation, they need a person's yes there
    sends: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(default=60.0, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SERVER_NAME.match(value):
            raise ValueError("name must be 1-32 letters, digits or '-' (e.g. ops)")
        return value

    @field_validator("agents", "approval", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("sends", mode="before")
    @classmethod
    def _all_or_globs(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return ["*"] if value else []
        return [value] if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP), not both")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def unique_servers(value: list[McpServerConfig]) -> list[McpServerConfig]:
    names = [s.name for s in value]
    if len(names) != len(set(names)):
        raise ValueError("two [[mcp_servers]] entries have the same name; names must differ")
    return value


class MissingVariable(Exception):
    """An `${NAME}` in an [[mcp_servers]] entry names a variable that is not set."""

    def __init__(self, server: str, variable: str, table: str = "mcp_servers") -> None:
        super().__init__(
            f"{variable} is not set (config file [[{table}]] {server!r} uses ${{{variable}}})."
        )


def interpolate(raw_servers: Any, environ: Mapping[str, str]) -> Any:
    """`${NAME}` in the env and headers values of raw TOML entries, from `environ`."""
    if not isinstance(raw_servers, list):
        return raw_servers
    out = []
    for entry in raw_servers:
        if isinstance(entry, dict):
            entry = dict(entry)
            for key in ("env", "headers"):
                if isinstance(entry.get(key), dict):
                    entry[key] = {
                        k: _fill(str(entry.get("name")), v, environ) for k, v in entry[key].items()
                    }
        out.append(entry)
    return out


def _fill(server: str, value: Any, environ: Mapping[str, str]) -> Any:
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise MissingVariable(server, name)
        return environ[name]

    return _VARIABLE.sub(one, value)
