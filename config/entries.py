"""The structured entries of the config file — `[[schedules]]`, `[heartbeat]`,
`[[people]]` — and the small value checks settings and entries share.

Imports nothing of the project but `config.targets`.
"""

from __future__ import annotations

from typing import Any, Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel, Field, field_validator

from config.targets import TargetSyntaxError, split_target


def split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def check_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("is not an IANA time zone (e.g. UTC, Europe/Berlin)") from exc
    return value


def check_target(value: str) -> str:
    """The runtime's own grammar (config/targets.py): what passes here, delivers."""
    try:
        split_target(value)
    except TargetSyntaxError as exc:
        raise ValueError(str(exc)) from exc
    return value.strip()


class ScheduleConfig(BaseModel):
    """One `[[schedules]]` entry of the config file."""

    name: str
    cron: str
    action: str
    timezone: str | None = None
    deliver_to: str | None = None
    agent: str = "coordinator"
    missed: Literal["catch_up", "skip"] = "catch_up"
    grace_seconds: int = Field(default=3600, ge=0)
    #: false: kept, but paused (it does not fire) until set true again
    enabled: bool = True

    _target = field_validator("deliver_to")(lambda v: v if v is None else check_target(v))
    _zone = field_validator("timezone")(lambda v: v if v is None else check_zone(v))

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(
                "must be a 5-field cron expression: minute hour day-of-month month "
                "day-of-week, e.g. '0 9 * * 1-5'"
            )
        return value


HeartbeatSource = Literal["messages", "workers", "questions", "outbox", "triggers"]
HEARTBEAT_SOURCES: tuple[HeartbeatSource, ...] = get_args(HeartbeatSource)


class HeartbeatConfig(BaseModel):
    """The `[heartbeat]` section: a periodic check-in with a checklist.

    `watch` names what the quiet rule looks at (see bot/triggers/heartbeat.py); the
    agent is woken only when one of them changed since the previous heartbeat.
    """

    interval_seconds: int = Field(ge=10)
    checklist: list[str] = Field(default_factory=list)
    watch: list[HeartbeatSource] = Field(
        default_factory=lambda: list(HEARTBEAT_SOURCES), min_length=1
    )
    action: str = (
        "Heartbeat check-in: go through your checklist and the changes listed below. "
        "Report only what needs a person's attention."
    )
    deliver_to: str | None = None
    agent: str = "coordinator"

    _target = field_validator("deliver_to")(lambda v: v if v is None else check_target(v))


_PERSON_NAME = r"^[A-Za-z][A-Za-z0-9 ._'-]{0,63}$"
PERSON_PLATFORMS = ("slack", "discord", "email")


class PersonConfig(BaseModel):
    """One `[[people]]` entry: the ids by which one person is known on each channel.

    Each platform field takes one id or a list of them; they are kept as lists.
    """

    name: str = Field(pattern=_PERSON_NAME)
    slack: list[str] = Field(default_factory=list)
    discord: list[str] = Field(default_factory=list)
    email: list[str] = Field(default_factory=list)
    timezone: str | None = None

    @field_validator("slack", "discord", "email", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str | int):
            value = [value]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
        return value

    @field_validator("email")
    @classmethod
    def _lower_addresses(cls, value: list[str]) -> list[str]:
        return [v.lower() for v in value]

    def ids(self) -> list[tuple[str, str]]:
        """(platform, id) for every id of this person."""
        return [(kind, i) for kind in PERSON_PLATFORMS for i in getattr(self, kind)]


def check_people(people: list[PersonConfig]) -> list[PersonConfig]:
    names: dict[str, str] = {}
    owners: dict[tuple[str, str], str] = {}
    for person in people:
        key = person.name.lower()
        if key in names:
            raise PeopleProblem(f"the name {person.name!r} is given to two entries")
        names[key] = person.name
        if person.timezone is not None:
            try:
                check_zone(person.timezone)
            except ValueError as exc:
                raise PeopleProblem(f"{person.name}: timezone {person.timezone!r} {exc}") from exc
        for kind, ident in person.ids():
            where = (kind, ident.lower() if kind == "email" else ident)
            if where in owners:
                other = owners[where]
                whom = f"{other} and {person.name}" if other != person.name else person.name
                raise PeopleProblem(f"the {kind} id {ident!r} is listed twice ({whom})")
            owners[where] = person.name
    return people


def expand_names(entries: list[str], people: list[PersonConfig], kind: str) -> list[str]:
    """Allow-list entries that name a person become that person's ids on `kind`."""
    by_name = {p.name.lower(): p for p in people}
    out: list[str] = []
    for entry in entries:
        person = by_name.get(entry.lower())
        if person is None:
            out.append(entry)
            continue
        ids = getattr(person, kind)
        if not ids:
            raise ValueError(f"names {person.name}, who has no {kind} id in [[people]]")
        out.extend(ids)
    return list(dict.fromkeys(out))


class PeopleProblem(ValueError):
    """A `[[people]]` problem; the text names the entry."""


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: object) -> float:
    """Seconds from `90`, `90s`, `15m`, `4h` or `1d` (a settings value)."""
    text = str(value).strip().lower()
    unit = _UNITS.get(text[-1:]) if text else None
    number = text[:-1] if unit else text
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise ValueError("must be a duration: seconds, or a number with s, m, h or d") from None
    if seconds <= 0:
        raise ValueError("must be more than zero")
    return seconds
