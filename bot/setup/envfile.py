"""`.env`: `NAME=value` lines (`#` comments, optional quotes) put into the environment at
start, under what is already set there (the environment wins, as over the config file).
"""

from __future__ import annotations

import os
from pathlib import Path


def parse(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def load(path: Path = Path(".env")) -> None:
    """Set each of the file's variables that the environment does not already set."""
    if not path.is_file():
        return
    for name, value in parse(path.read_text(encoding="utf-8")).items():
        if name and value and name not in os.environ:
            os.environ[name] = value
