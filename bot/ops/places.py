"""What a conversation's place is called, for a reader of the dashboard.

A conversation is keyed by where it happens (`slack:C1/1006.1`, `email:ann@example.com`,
`task` for a worker, `home`, `trigger:<id>`); an operator looks for "the DM with Ann",
"the mail about the invoice", "the thread in C1". The runtime knows no Slack or Discord
channel names (it never asks the platform), so a channel reads by its id, a DM by the
person in it, a mail by its subject.
"""

from __future__ import annotations

from typing import Any

from bot.core.messages import Target, TargetError
from bot.ops.reading import people_and_first_line, subject_of


def place_name(
    key: str, target: str | None, messages: list[dict[str, Any]], agent: str = ""
) -> str:
    people, _first = people_and_first_line(messages)
    return describe(key, target, people, subject_of(messages), agent)


def describe(key: str, target: str | None, people: list[str], subject: str, agent: str = "") -> str:
    """`Slack DM with Ann`, `Slack channel C1, a thread`, `Email: Invoice 42`,
    `Alice's task`..."""
    if key == "task":
        return f"{agent}'s task" if agent else "a worker's task"
    if key == "home":
        return "home (mail that belongs to no conversation)"
    if key.startswith("trigger:"):
        return f"scheduled task {key.removeprefix('trigger:')}"
    try:
        where = Target.parse(target or key)
    except TargetError:
        return key
    with_whom = f" with {', '.join(people[:3])}" if people else ""
    if where.kind == "email":
        return f"Email: {subject}" if subject else f"Email{with_whom or ' with ' + where.address}"
    if where.kind == "terminal":
        return "Terminal"
    platform = where.kind.capitalize()
    if where.kind == "slack" and where.address[:1] == "D":
        return f"Slack DM{with_whom}"
    thread = ", a thread" if where.thread else ""
    return f"{platform} channel {where.address}{thread}"
