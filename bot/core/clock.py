"""The current time as agents read it: `YYYY-MM-DD HH:MM` with the zone, its UTC
offset and the weekday, in a given IANA zone.

It travels with the messages an agent takes in (never in the system prompt), so
the cached prompt prefix stays byte-identical while the agent still knows, every
turn, what day and time it is for the person it talks to.
"""

from __future__ import annotations

import time
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone(name: str | None, fallback: str = "UTC") -> ZoneInfo:
    """`name` as a ZoneInfo; an unknown or empty name falls back (never raises)."""
    for candidate in (name, fallback, "UTC"):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")


def stamp(zone_name: str | None, at: float | None = None, fallback: str = "UTC") -> str:
    """E.g. `2026-11-23 15:04 Europe/Berlin (UTC+01:00, Monday)`."""
    tz = zone(zone_name, fallback)
    when = datetime.fromtimestamp(time.time() if at is None else at, tz)
    offset = when.strftime("%z")
    return f"{when:%Y-%m-%d %H:%M} {tz.key} (UTC{offset[:3]}:{offset[3:]}, {when:%A})"


def now_line(zone_name: str | None, at: float | None = None, fallback: str = "UTC") -> str:
    """The line an agent reads before the messages of a turn."""
    return f"[Now: {stamp(zone_name, at, fallback)}]"
