"""`[[hooks]]` entries of the config file: signed inbound webhooks (docs/hooks.md).

Each entry serves `POST /hooks/<name>`: `kind` says how a request is signed and read
(`alertmanager`, `github`, `pagerduty`, `generic`), `secret` is the shared secret (a
`${VARIABLE}` keeps it out of the file), `deliver_to` where the agent posts, `action`
what the agent is asked to do with the payload, `filter` which deliveries are acted on
(as an `on_event` trigger's), `agent` who takes it (`coordinator` or a `worker`
started per delivery). Imports nothing of the project but `config.entries` and `config.tools`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

from config.entries import check_target
from config.tools import MissingVariable

HookKind = Literal["alertmanager", "github", "pagerduty", "generic"]
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
#: a secret shorter than this is refused: anyone could guess it
MIN_SECRET_CHARS = 16


class HookConfig(BaseModel):
    """One `[[hooks]]` entry."""

    name: str
    kind: HookKind
    secret: SecretStr
    deliver_to: str
    action: str
    filter: dict[str, str | int | float | bool] = Field(default_factory=dict)
    agent: Literal["coordinator", "worker"] = "coordinator"
    #: notifications of one alert group (or incident) within this many seconds of the
    #: last one it handed to an agent become one turn
    cooldown_seconds: float = Field(default=60.0, ge=0)
    #: how many alerts of a group the agent sees in full (the rest are counted)
    max_alerts: int = Field(default=20, ge=1, le=500)
    enabled: bool = True

    _target = field_validator("deliver_to")(check_target)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("name must be 1-40 letters, digits, '-' or '_' (e.g. alerts)")
        return value

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value().strip()) < MIN_SECRET_CHARS:
            raise ValueError(f"secret must be at least {MIN_SECRET_CHARS} characters")
        return value

    @field_validator("action")
    @classmethod
    def _action(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("action must say what the agent should do with the payload")
        return value.strip()


def unique_hooks(value: list[HookConfig]) -> list[HookConfig]:
    names = [h.name for h in value]
    if len(names) != len(set(names)):
        raise ValueError("two [[hooks]] entries have the same name; names must differ")
    return value


_VARIABLE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def fill_secrets(raw: Any, environ: Mapping[str, str]) -> Any:
    """A `secret = "${NAME}"` of a raw `[[hooks]]` entry, read from `environ`."""
    if not isinstance(raw, list):
        return raw
    out = []
    for entry in raw:
        found = _VARIABLE.match(str(entry.get("secret", ""))) if isinstance(entry, dict) else None
        if found is not None:
            name = found.group(1)
            if name not in environ:
                raise MissingVariable(str(entry.get("name")), name, "hooks")
            entry = {**entry, "secret": environ[name]}
        out.append(entry)
    return out
