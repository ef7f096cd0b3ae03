"""The grammar of delivery targets, written once.

`slack:<channel>[/<thread_ts>]`, `discord:<channel>[/<thread>]`, `email:<address>`,
`terminal`. Settings validation (`SWITCHBOARD_HOME`, `deliver_to`) and the runtime
(`bot.core.messages.Target.parse`, agent tools) both parse with `split_target`, so a
target the settings accept is one the runtime can deliver to. Imports nothing of
the project (config is the bottom floor).
"""

from __future__ import annotations

import re

#: `api:<caller>/<conversation>` is where the HTTP API's conversations are answered
TARGET_KINDS = ("slack", "discord", "email", "terminal", "api")
USAGE = (
    "use slack:<channel>[/<thread_ts>], discord:<channel>[/<thread>], email:<address> or terminal"
)
# A plain mailbox address: one @, no spaces (bot@localhost is a real address too).
_EMAIL = re.compile(r"^[^@\s/]+@[^@\s/]+$")
# Slack and Discord ids and Slack thread timestamps: letters, digits, dots, dashes.
_ID = re.compile(r"^[A-Za-z0-9._-]+$")


class TargetSyntaxError(ValueError):
    """A delivery target string that does not parse; the message says what would."""


def split_target(text: str) -> tuple[str, str, str | None]:
    """(kind, address, thread) of a target string, or TargetSyntaxError."""
    kind, _, rest = text.strip().partition(":")
    if kind not in TARGET_KINDS:
        raise TargetSyntaxError(f"unknown delivery target {text!r}: {USAGE}")
    if kind == "terminal":
        if rest:
            raise TargetSyntaxError(f"delivery target {text!r}: terminal takes no address")
        return "terminal", "", None
    if not rest:
        raise TargetSyntaxError(f"delivery target {text!r} names no {kind} address: {USAGE}")
    if kind == "email":
        if not _EMAIL.match(rest):
            raise TargetSyntaxError(
                f"delivery target {text!r} is not an email address (email:you@example.com)"
            )
        return kind, rest.lower(), None
    address, _, thread = rest.partition("/")
    for part in (address, thread) if thread else (address,):
        if not _ID.match(part):
            raise TargetSyntaxError(f"delivery target {text!r} is not a {kind} id: {USAGE}")
    return kind, address, thread or None
