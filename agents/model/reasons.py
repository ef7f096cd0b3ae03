"""Why the model cannot be used, in one line a person can act on: a key the API refuses
names ANTHROPIC_API_KEY, an endpoint that cannot be reached names its URL and
ANTHROPIC_BASE_URL. Used by the provider (agents/model/llm.py), the console and
`switchboard doctor`.

The SDK's exceptions are read by their attributes only, so this module does not import it.
"""

from __future__ import annotations

import logging

log = logging.getLogger("agents.model")


def _api_message(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None


def _root(exc: BaseException) -> str:
    """The innermost cause's text: `[Errno 111] Connection refused`, not the SDK's
    `Connection error.`"""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    text = str(seen).strip() or type(seen).__name__
    return text.splitlines()[0][:200]


def explain(exc: BaseException, base_url: str) -> str:
    """One line: what is wrong and what to change; the API's own words otherwise."""
    status = getattr(exc, "status_code", None)
    said = _api_message(exc)
    if status == 401:
        return f"ANTHROPIC_API_KEY was refused by {base_url} ({said or 'HTTP 401'})"
    if status == 403:
        return f"ANTHROPIC_API_KEY may not do this at {base_url} ({said or 'HTTP 403'})"
    if status is None and type(exc).__name__ in ("APIConnectionError", "APITimeoutError"):
        return f"cannot reach {base_url}: {_root(exc)} (ANTHROPIC_BASE_URL)"
    if status and said:
        return f"HTTP {status}: {said}"[:300]
    return (f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}")[:300]


def for_people(reason: str) -> str:
    """What a person in a conversation is told of an outage (no URLs, no settings)."""
    if reason.startswith("ANTHROPIC_API_KEY"):
        return "its API key was refused; the operator needs to fix the key"
    if reason.startswith("cannot reach"):
        return "it cannot be reached"
    if reason.startswith("the cloud credentials expired"):
        return "its cloud credentials expired; the operator needs to renew them"
    return ""


class Outage:
    """The model's state for the console: one log line when it becomes unusable or its
    reason changes, one when it answers again; never one per retry."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def failed(self, reason: str) -> None:
        if reason != self.reason:
            log.warning("the model cannot be used: %s", reason)
        self.reason = reason

    def answered(self) -> None:
        if self.reason is not None:
            log.warning("the model answers again (it was: %s)", self.reason)
        self.reason = None
