"""What a trigger is: the six types of the contract, validated into a `TriggerSpec`.

Validation happens here, once, for agent tools and the config file alike. Every
problem raises `TriggerError` with a text that says what to send instead, because
the model reads it. Cron expressions are checked with croniter and then turned into
an APScheduler trigger explicitly (see `cron_trigger`): APScheduler 3 numbers
weekdays from Monday, crontab from Sunday, so the text is never handed over as is.
Imports nothing of the project.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from croniter import croniter

from bot.core.known_events import IGNORED_PREFIX, KNOWN_EVENTS, fields_of, matching
from config.entries import HEARTBEAT_SOURCES as WATCH_SOURCES

TYPES = ("scheduled", "delayed", "at_time", "heartbeat", "on_event", "on_idle")
ONE_SHOT = ("delayed", "at_time")
ACTION_TYPES = ("wake_agent", "send_message")
MISSED_POLICIES = ("catch_up", "skip")

#: A `skip` trigger whose run starts later than this counts as missed (not run).
SKIP_TOLERANCE_SECONDS = 30
DEFAULT_GRACE_SECONDS = 3600
DEFAULT_COOLDOWN_SECONDS = 10.0
#: the floor of how often an `on_event` trigger fires (docs/conversations.md): at most once
#: per this many seconds, whatever its `cooldown_seconds`, so no trigger floods a place
MIN_COOLDOWN_SECONDS = 10.0

_COMMON = ("agent", "action_type", "missed", "grace_seconds", "timezone")
#: the keys each type takes; the first is required
_KEYS: dict[str, tuple[str, ...]] = {
    "scheduled": ("cron",),
    "delayed": ("delay_seconds",),
    "at_time": ("at",),
    "heartbeat": ("interval_seconds", "checklist", "watch"),
    "on_event": ("event_pattern", "filter", "cooldown_seconds"),
    "on_idle": ("idle_seconds", "watch_agent"),
}
_EXAMPLES = {
    "scheduled": '{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}',
    "delayed": '{"delay_seconds": 1800}',
    "at_time": '{"at": "2030-02-12T09:00:00"}',
    "heartbeat": '{"interval_seconds": 1800, "checklist": ["open questions"]}',
    "on_event": '{"event_pattern": "worker.completed", "filter": {"agent_id": "alice"}}',
    "on_idle": '{"idle_seconds": 3600}',
}
_DOW_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class TriggerError(ValueError):
    """A trigger request that cannot be accepted; the text says how to fix it."""


@dataclass(slots=True)
class TriggerSpec:
    """A validated trigger: what fires it and what it does."""

    type: str
    config: dict[str, Any]
    action: str
    agent: str = "coordinator"
    action_type: str = "wake_agent"
    deliver_to: str | None = None
    timezone: str = "UTC"
    missed: str = "catch_up"
    grace_seconds: int = DEFAULT_GRACE_SECONDS
    fire_at: float | None = None  # one-shots: the epoch second they fire at
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TriggerSpec:
        return cls(**data)

    @property
    def misfire_grace(self) -> int:
        """APScheduler's misfire_grace_time for this trigger's policy."""
        if self.missed == "skip":
            return min(self.grace_seconds, SKIP_TOLERANCE_SECONDS)
        return self.grace_seconds

    def timing(self) -> tuple[Any, ...]:
        """What decides when it fires; a change here reschedules its job."""
        return (
            self.type,
            self.config.get("cron"),
            self.config.get("interval_seconds"),
            self.fire_at,
            self.timezone,
        )

    def describe(self) -> str:
        c = self.config
        match self.type:
            case "scheduled":
                return f"cron '{c['cron']}' {self.timezone}"
            case "heartbeat":
                return f"every {c['interval_seconds']}s"
            case "on_event":
                extra = f" where {c['filter']}" if c.get("filter") else ""
                return f"on event {c['event_pattern']}{extra}"
            case "on_idle":
                return f"when {c.get('watch_agent', self.agent)} is idle {c['idle_seconds']}s"
        return "once at " + datetime.fromtimestamp(self.fire_at or 0, UTC).isoformat()


def build_spec(
    type: str,
    config: Any,
    action: str,
    deliver_to: str | None = None,
    *,
    default_agent: str = "coordinator",
    default_timezone: str = "UTC",
    min_interval: float = 60.0,
    now: float | None = None,
) -> TriggerSpec:
    """Validate a trigger request; raises TriggerError naming the problem and the fix."""
    if type not in TYPES:
        raise TriggerError(f"unknown trigger type {type!r}: use one of {', '.join(TYPES)}")
    if not isinstance(config, dict):
        raise TriggerError(f"config must be an object, e.g. {_EXAMPLES[type]}")
    if not isinstance(action, str) or not action.strip():
        raise TriggerError("action is empty: say what should happen when the trigger fires")
    _check_keys(type, config)
    spec = TriggerSpec(type, dict(config), action.strip(), deliver_to=deliver_to)
    _common(spec, config, default_agent, default_timezone)
    now = time.time() if now is None else now
    _TYPE_CHECKS[type](spec, min_interval, now)
    return spec


def _check_keys(type: str, config: dict[str, Any]) -> None:
    allowed = _KEYS[type] + _COMMON
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise TriggerError(
            f"unknown config key(s) {', '.join(unknown)} for a {type} trigger; "
            f"allowed: {', '.join(allowed)} (e.g. {_EXAMPLES[type]})"
        )
    required = _KEYS[type][0]
    if required not in config:
        raise TriggerError(f"a {type} trigger needs config.{required}, e.g. {_EXAMPLES[type]}")


def _common(spec: TriggerSpec, config: dict[str, Any], agent: str, zone: str) -> None:
    spec.agent = _text(config.get("agent", agent), "agent")
    spec.action_type = config.get("action_type", "wake_agent")
    if spec.action_type not in ACTION_TYPES:
        raise TriggerError(f"config.action_type must be one of {', '.join(ACTION_TYPES)}")
    spec.missed = config.get("missed", "catch_up")
    if spec.missed not in MISSED_POLICIES:
        raise TriggerError("config.missed must be 'catch_up' (run once late) or 'skip'")
    spec.grace_seconds = int(
        _number(config.get("grace_seconds", DEFAULT_GRACE_SECONDS), "grace_seconds", minimum=1)
    )
    spec.timezone = check_timezone(config.get("timezone", zone))
    for key in _COMMON:
        spec.config.pop(key, None)


def check_timezone(name: Any) -> str:
    try:
        ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TriggerError(
            f"unknown timezone {name!r}: use an IANA name like UTC, Europe/Berlin or "
            "America/New_York"
        ) from exc
    return str(name)


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TriggerError(f"config.{key} must be a non-empty string")
    return value.strip()


def _number(value: Any, key: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TriggerError(f"config.{key} must be a number of seconds, got {value!r}")
    if value < minimum:
        raise TriggerError(f"config.{key} must be at least {minimum:g} seconds, got {value!r}")
    return float(value)


# -- per type -------------------------------------------------------------------------
def _scheduled(spec: TriggerSpec, min_interval: float, now: float) -> None:
    spec.config["cron"] = check_cron(spec.config["cron"])


def _delayed(spec: TriggerSpec, min_interval: float, now: float) -> None:
    delay = _number(spec.config["delay_seconds"], "delay_seconds", minimum=0.001)
    spec.fire_at = now + delay


def _at_time(spec: TriggerSpec, min_interval: float, now: float) -> None:
    raw = spec.config["at"]
    when = parse_instant(raw, ZoneInfo(spec.timezone)) if isinstance(raw, str) else None
    if when is None:
        raise TriggerError(
            f"config.at {raw!r} is not an ISO 8601 date-time; use e.g. 2030-02-12T09:00:00 "
            f"(in {spec.timezone}) or 2030-02-12T09:00:00+01:00"
        )
    if when.timestamp() <= now:
        raise TriggerError(
            f"config.at {raw!r} is in the past (now is "
            f"{datetime.fromtimestamp(now, ZoneInfo(spec.timezone)).isoformat(timespec='seconds')}"
            f" in {spec.timezone}); give a future time, or use a delayed trigger"
        )
    spec.fire_at = when.timestamp()


def _heartbeat(spec: TriggerSpec, min_interval: float, now: float) -> None:
    c = spec.config
    c["interval_seconds"] = _number(c["interval_seconds"], "interval_seconds", min_interval)
    checklist = c.setdefault("checklist", [])
    if not isinstance(checklist, list) or not all(isinstance(i, str) for i in checklist):
        raise TriggerError('config.checklist must be a list of strings, e.g. ["open questions"]')
    watch = c.setdefault("watch", list(WATCH_SOURCES))
    if not isinstance(watch, list) or not set(watch) <= set(WATCH_SOURCES) or not watch:
        raise TriggerError(f"config.watch must list some of: {', '.join(WATCH_SOURCES)}")


def _on_event(spec: TriggerSpec, min_interval: float, now: float) -> None:
    c = spec.config
    c["event_pattern"] = _text(c["event_pattern"], "event_pattern")
    if not isinstance(c.setdefault("filter", {}), dict):
        raise TriggerError('config.filter must be an object, e.g. {"agent_id": "alice"}')
    _known_event(c["event_pattern"], c["filter"])
    cooldown = c.setdefault("cooldown_seconds", DEFAULT_COOLDOWN_SECONDS)
    c["cooldown_seconds"] = _number(cooldown, "cooldown_seconds", minimum=MIN_COOLDOWN_SECONDS)


def _known_event(pattern: str, wanted: dict[str, Any]) -> None:
    """The pattern matches some event Switchboard emits, and each filter key is a field
    of one of those events; else the error lists what there is."""
    types = [t for t in matching(pattern) if not t.startswith(IGNORED_PREFIX)]
    if not types:
        known = ", ".join(t for t in KNOWN_EVENTS if not t.startswith(IGNORED_PREFIX))
        raise TriggerError(
            f"config.event_pattern {pattern!r} matches no event Switchboard emits; "
            f"known events: {known}"
        )
    fields = fields_of(types)
    unknown = [k for k in wanted if fields is not None and k not in fields]
    if unknown:
        assert fields is not None
        raise TriggerError(
            f"config.filter names {', '.join(map(repr, unknown))}, which no {pattern} event "
            f"carries; its fields: {', '.join(sorted(fields))}"
        )


def _on_idle(spec: TriggerSpec, min_interval: float, now: float) -> None:
    c = spec.config
    c["idle_seconds"] = _number(c["idle_seconds"], "idle_seconds", min_interval)
    c["watch_agent"] = _text(c.get("watch_agent", spec.agent), "watch_agent").lower()


_TYPE_CHECKS = {
    "scheduled": _scheduled,
    "delayed": _delayed,
    "at_time": _at_time,
    "heartbeat": _heartbeat,
    "on_event": _on_event,
    "on_idle": _on_idle,
}


# -- time -----------------------------------------------------------------------------
def check_cron(expr: Any) -> str:
    if not isinstance(expr, str):
        raise TriggerError("config.cron must be a string like '0 9 * * 1-5'")
    expr = " ".join(expr.split())
    fields = expr.split(" ")
    if len(fields) != 5:
        raise TriggerError(
            f"cron {expr!r} has {len(fields)} fields; use 5: minute hour day-of-month month "
            "day-of-week, e.g. '0 9 * * 1-5' (weekdays at 09:00) or '*/30 * * * *'"
        )
    if not croniter.is_valid(expr):
        raise TriggerError(
            f"cron {expr!r} is not a valid cron expression; fields are minute (0-59) hour "
            "(0-23) day-of-month (1-31) month (1-12) day-of-week (0-7, 0 and 7 = Sunday)"
        )
    expanded, nth = croniter.expand(expr)
    if nth:
        raise TriggerError(f"cron {expr!r}: the '#' (nth weekday) form is not supported")
    if expanded[2] != ["*"] and expanded[4] != ["*"]:
        raise TriggerError(
            f"cron {expr!r} restricts both day-of-month and day-of-week; restrict one of them "
            "(use two triggers for 'the 1st or any Monday')"
        )
    return expr


def cron_trigger(expr: str, zone: tzinfo) -> CronTrigger:
    """An APScheduler trigger that fires exactly when crontab (and croniter) says."""
    fields, _ = croniter.expand(expr)

    def join(values: list[Any]) -> str:
        return "*" if values == ["*"] else ",".join(_dom(v) for v in values)

    dow = "*" if fields[4] == ["*"] else ",".join(_DOW_NAMES[int(v) % 7] for v in fields[4])
    return CronTrigger(
        minute=join(fields[0]),
        hour=join(fields[1]),
        day=join(fields[2]),
        month=join(fields[3]),
        day_of_week=dow,
        timezone=zone,
    )


def repeats_wall_time(spec: TriggerSpec, fire_time: datetime) -> bool:
    """True for the second run of a fixed-hour cron in the hour that DST repeats.

    APScheduler fires at both 01:30s of a fall-back night; crontab runs a job with a
    fixed hour once (jobs with `*` in the hour run in both hours, an hour apart).
    """
    if spec.type != "scheduled" or spec.config["cron"].split()[1] == "*":
        return False
    return fire_time.astimezone(ZoneInfo(spec.timezone)).fold == 1


def _dom(value: Any) -> str:
    return "last" if str(value).lower() == "l" else str(value)


def schedule_of(spec: TriggerSpec) -> BaseTrigger | None:
    """The APScheduler trigger of a time trigger; None for on_event / on_idle."""
    zone = ZoneInfo(spec.timezone)
    if spec.type == "scheduled":
        return cron_trigger(spec.config["cron"], zone)
    if spec.type == "heartbeat":
        return IntervalTrigger(seconds=spec.config["interval_seconds"], timezone=zone)
    if spec.type in ONE_SHOT:
        return DateTrigger(run_date=datetime.fromtimestamp(spec.fire_at or 0, UTC), timezone=zone)
    return None


def parse_instant(text: str, zone: tzinfo) -> datetime | None:
    """ISO 8601 (a trailing Z allowed); a time without offset is in `zone`."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=zone)
