"""Settings that are valid but cannot work as meant, said once at start as a warning line
naming the variable: a home target on a channel that does not run here, an approver who
matches nobody."""

from __future__ import annotations

import getpass
import re

from config.settings import Settings

#: what a platform id looks like: Slack users (U…/W…), Discord snowflakes
_PLATFORM_ID = re.compile(r"(slack:|discord:)?([UW][A-Z0-9]{6,}|\d{15,21})")


def warnings(settings: Settings, channels: list[str]) -> list[str]:
    return [*_home(settings, channels), *_approvers(settings)]


def _home(settings: Settings, channels: list[str]) -> list[str]:
    home = settings.home
    if home is None:
        return []
    kind = home.split(":", 1)[0]
    if kind in channels:
        return []
    running = ", ".join(channels) or "none"
    return [
        f"SWITCHBOARD_HOME is {home}, but {kind} does not run here (running: {running}): "
        "messages that belong to no conversation (schedules, reminders, escalations) "
        "cannot be delivered; set it to a target on a running channel"
    ]


def _approvers(settings: Settings) -> list[str]:
    people = {p.name.lower() for p in settings.people}
    try:
        me = getpass.getuser().lower()  # the terminal's speaker
    except (KeyError, OSError):
        me = ""
    lines = []
    for entry in settings.approvers:
        name = entry.strip()
        known = name.lower() in people or name.lower() == me
        if known or "@" in name or _PLATFORM_ID.fullmatch(name):
            continue
        lines.append(
            f"SWITCHBOARD_APPROVERS: {name!r} matches no [[people]] name, Slack or Discord id "
            "or email address, so nobody can approve as it"
        )
    return lines
