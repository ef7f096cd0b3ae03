"""Whose work is where: every conversation is its own (docs/security.md).

A worker belongs to the conversation that started it (its origin). A person reaches
it (`@Name`, `@all`, `stop`) only from that conversation or a place the
conversation's scope includes: its own target (another thread of a DM, the same
email correspondent), the places where the worker asked its open questions, and the
person who asked for its task themself, under any of their ids (Ann answers her
worker by mail as in Slack). Anywhere else the person is told it is not their worker
and nothing reaches it.

Work that no person's message started is the operator's: a trigger of the config file
runs in a conversation of its own (`trigger:<id>`), mail that belongs to no
conversation in `home`, and the terminal is the operator's own console. Such work is
reached from its target (where it reports) or the terminal. Imports only message types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.messages import Inbound, Target, TargetError

#: the operator's own console: it reaches every worker, as it approves every call
CONSOLE = "terminal"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a worker's task was asked: the conversation and its delivery target."""

    conversation: str | None
    target: str | None = None
    #: the platform ids (`slack:U1`, `email:ann@example.com`) of who asked for the task
    owners: frozenset[str] = frozenset()

    def holds(self, conversation: str, reply_to: Target | None) -> bool:
        """Whether a message of `conversation` (answered at `reply_to`) is in this
        origin's own place: the conversation itself, or its target's place."""
        if conversation == self.conversation:
            return True
        here = _parse(self.target)
        return reply_to is not None and here is not None and same_place(reply_to, here)


def reaches(
    msg: Inbound, origin: Origin | None, asked_in: Iterable[str] = (), sender: str | None = None
) -> bool:
    """Whether `msg` (from the platform id `sender`) may reach the worker of `origin`,
    whose open questions were posted in the places `asked_in` (conversations and
    platform references). An unknown origin is reached from the console only."""
    return owns(msg, origin, sender) or asked_here(msg, asked_in)


def owns(msg: Inbound, origin: Origin | None, sender: str | None = None) -> bool:
    """Whether `msg` comes from the worker's own: its origin's place, the person who
    asked for its task, or the console (any of its questions is theirs to answer)."""
    if msg.channel == CONSOLE:
        return True
    if origin is None:
        return False
    return origin.holds(msg.conversation, msg.reply_to) or sender in origin.owners


def asked_here(msg: Inbound, places: Iterable[str]) -> bool:
    """Whether `msg` is in one of `places` (a question's conversation or references)."""
    found = set(places)
    return msg.conversation in found or bool(found & set(msg.thread_refs))


def same_place(target: Target, here: Target | None) -> bool:
    """The current conversation: its own target, or its channel (another thread of it
    is a place the person is in, but the whole channel is checked like any other)."""
    if here is None:
        return False
    if target.kind == "email" and here.kind == "email":
        return target.address.lower() == here.address.lower()
    return (
        target.kind == here.kind
        and target.address == here.address
        and (target.thread in (None, here.thread) or here.thread is None)
    )


def _parse(text: str | None) -> Target | None:
    if not text:
        return None
    try:
        return Target.parse(text)
    except TargetError:
        return None
