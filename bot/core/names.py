"""Who is who, and whose work: how a person is named in records and the audit log, and
which conversations are the operator's own (no person's message started them)."""

from __future__ import annotations


def platform_id(channel: str, ident: str) -> str:
    """How a sender is named in approval records and the audit log: `slack:U123`,
    `email:ann@example.com` (lower case), the terminal simply `terminal`, and an API
    caller its own `api:<name>` (the id it already carries)."""
    if channel == "terminal":
        return "terminal"
    if ident.startswith(f"{channel}:"):  # an API caller is already `api:<name>`
        return ident
    return f"{channel}:{ident.lower() if channel == 'email' else ident}"


def who(name: str | None, ident: str | None) -> str:
    """`Ann (slack:U123)`; the platform id alone when there is no other name for it."""
    if not ident:
        return name or ""
    if not name or name in (ident, ident.split(":", 1)[-1]):
        return ident
    return f"{name} ({ident})"


#: the coordinator's conversation for mail that belongs to no conversation
HOME_CONVERSATION = "home"


#: a trigger made in no conversation runs in its own: `trigger:<id>`
TRIGGER_CONVERSATION = "trigger:"


def operator_conversation(key: str | None) -> bool:
    """Work no person's message started (a config trigger's, `home`): the operator's."""
    return key is None or key == HOME_CONVERSATION or key.startswith(TRIGGER_CONVERSATION)
