"""Who may use the HTTP API: SWITCHBOARD_API_TOKEN names its callers.

The value is `name:token` pairs separated by commas (`ci:3f9a...,alerts:77c1...`); a
bare token is the caller `api`. Each caller speaks as `api:<name>`, so the transcript,
the audit log and the agents see which program wrote.
"""

from __future__ import annotations

import re

from config.sources import FieldProblem

MIN_TOKEN_CHARS = 8
_CALLER = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def api_callers(text: str) -> dict[str, str]:
    """SWITCHBOARD_API_TOKEN as {token: caller name}: `name:token` pairs separated by
    commas; a bare token is the caller `api`."""
    callers: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, token = part.rpartition(":")
        name = name.strip() if sep else "api"
        token = token.strip()
        if not _CALLER.match(name):
            raise FieldProblem("api_token", f"caller name {name!r} may hold letters, digits, . _ -")
        if len(token) < MIN_TOKEN_CHARS:
            raise FieldProblem(
                "api_token", f"{name}'s token must be at least {MIN_TOKEN_CHARS} characters"
            )
        callers[token] = name
    if not callers:
        raise FieldProblem("api_token", "names no token (name:token, comma-separated)")
    return callers
