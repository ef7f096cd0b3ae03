"""Where settings come from and how a problem is said: the TOML file's layout, one
environment variable per field, and a validation error turned into one line that names
the variable (or the config file entry) at fault.

Imports nothing of the project but `config.entries`.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from config.entries import PeopleProblem

# Fields whose environment variable is the upper-cased field name without prefix.
PLATFORM_PREFIXES = (
    "anthropic_",
    "openai_",
    "cloud_ml_",
    "aws_",
    "slack_",
    "discord_",
    "email_",
    "imap_",
    "smtp_",
)
# TOML sections whose keys are flattened to `<section>_<key>`.
TOML_SECTIONS = ("anthropic", "openai", "slack", "discord", "email", "imap", "smtp")


# Fields set only in the config file (structured entries, no environment variable).
FILE_ONLY = ("schedules", "heartbeat", "people", "prices", "mcp_servers", "hooks")


def env_name(field: str) -> str:
    """The one environment variable that sets `field`."""
    if field in ("port", "ssl_cert_file"):  # names every HTTP/TLS tool already reads
        return field.upper()
    if field.startswith(PLATFORM_PREFIXES):
        return field.upper()
    return f"SWITCHBOARD_{field.upper()}"


class FieldProblem(ValueError):
    """A problem of one field found by a cross-field check; said with its variable."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def flatten_toml(data: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in TOML_SECTIONS and isinstance(value, Mapping):
            flat.update({f"{key}_{inner}": v for inner, v in value.items()})
        elif key == "switchboard" and isinstance(value, Mapping):
            flat.update(value)
        else:
            flat[key] = value
    return flat


class UnknownKey(ValueError):
    """The config file names a setting Switchboard does not have (a typo, most often)."""


def known_keys(flat: dict[str, Any], fields: Collection[str], path: Path) -> dict[str, Any]:
    """`flat` itself, once every key of it is a setting; else UnknownKey naming the first."""
    for key, value in flat.items():
        if key in fields:
            continue
        kind = "section" if isinstance(value, Mapping) else "setting"
        shown = f"[{key}]" if kind == "section" else key
        close = difflib.get_close_matches(key, [*fields, *TOML_SECTIONS], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UnknownKey(
            f"SWITCHBOARD_CONFIG: {path} has an unknown {kind} {shown}{hint}; "
            "the settings are listed in docs/settings.md."
        )
    return flat


def read_file(path: Path, fields: Collection[str]) -> dict[str, Any]:
    """The config file's settings, flattened; UnknownKey (a one-line message naming
    SWITCHBOARD_CONFIG) when it is missing, not TOML, or names an unknown setting."""
    try:
        flat = flatten_toml(tomllib.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise UnknownKey(f"SWITCHBOARD_CONFIG: no such file {path}.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UnknownKey(f"SWITCHBOARD_CONFIG: {path} is not valid TOML ({exc}).") from exc
    return known_keys(flat, fields, path)


def from_environ(environ: Mapping[str, str], fields: Iterable[str]) -> dict[str, Any]:
    """The value of every field whose variable is set (and not empty)."""
    values: dict[str, Any] = {}
    for name in fields:
        if name in FILE_ONLY:
            continue
        raw = environ.get(env_name(name))
        if raw is not None and raw != "":
            values[name] = raw
    return values


def one_line(exc: ValidationError, secret: Collection[str] = ()) -> str:
    """The first error in one line naming its variable; the value it got is shown, unless
    the field is in `secret` (a token, a password, a URL holding one)."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    ctx = error.get("ctx") or {}
    problem = ctx.get("error")
    if isinstance(problem, FieldProblem):
        return f"{env_name(problem.field)} {problem.problem}."
    if isinstance(problem, PeopleProblem):
        return f"config file [[people]]: {problem}."
    if loc and loc[0] == "people":
        return f"config file [[people]] entry {'.'.join(loc[1:])}: {error['msg']}."
    if loc and loc[0] in ("schedules", "heartbeat", "prices", "mcp_servers", "hooks"):
        where = ".".join(loc)
        return f"config file [{where}]: {error['msg']}."
    name = env_name(loc[0]) if loc else "settings"
    message = str(problem) if problem else error["msg"]
    if loc and loc[0] in secret:
        return f"{name}: {message}."
    return f"{name}: {message} (got {error.get('input')!r})."


def default_config_path(environ: Mapping[str, str]) -> Path | None:
    """`$SWITCHBOARD_CONFIG`, else `config/switchboard.toml` when it exists."""
    if environ.get("SWITCHBOARD_CONFIG"):
        return Path(environ["SWITCHBOARD_CONFIG"])
    candidate = Path("config/switchboard.toml")
    return candidate if candidate.exists() else None
