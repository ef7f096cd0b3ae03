"""Who may use the HTTP API: SWITCHBOARD_API_TOKEN names its callers.

The value is `name:token` pairs separated by commas (`ci:3f9a...,alerts:77c1...`); a
bare token is the caller `api`. Each caller speaks as `api:<name>`, so the transcript,
the audit log and the agents see which program wrote.

A caller speaks in the conversations it starts (`api:<name>/...`). Posting into any
other place (a Slack thread, a DM, an email address) needs that place listed for it in
SWITCHBOARD_API_TARGETS: `name:target` pairs separated by commas
(`ci:slack:CDEPLOYS,alerts:email:oncall@example.com`).
"""

from __future__ import annotations

import re

from config.sources import FieldProblem
from config.targets import TargetSyntaxError, split_target

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


def api_targets(entries: list[str], callers: set[str] | None = None) -> dict[str, frozenset[str]]:
    """SWITCHBOARD_API_TARGETS as {caller name: the targets it may post into}, each
    target written as the runtime writes it (`email:` lower-cased); `callers`, when
    given, are the names SWITCHBOARD_API_TOKEN knows."""
    found: dict[str, set[str]] = {}
    for entry in entries:
        name, sep, target = entry.partition(":")
        if not sep or not _CALLER.match(name.strip()):
            raise FieldProblem("api_targets", f"{entry!r} is not caller:target (ci:slack:C123)")
        if callers is not None and name.strip() not in callers:
            raise FieldProblem(
                "api_targets", f"{name.strip()!r} is no caller of SWITCHBOARD_API_TOKEN"
            )
        try:
            kind, address, thread = split_target(target)
        except TargetSyntaxError as exc:
            raise FieldProblem("api_targets", str(exc)) from exc
        shown = (
            kind if kind == "terminal" else f"{kind}:{address}" + (f"/{thread}" if thread else "")
        )
        found.setdefault(name.strip(), set()).add(shown)
    return {name: frozenset(targets) for name, targets in found.items()}
