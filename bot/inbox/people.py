"""People: one person behind the ids of every channel (`[[people]]` in the config).

The human node resolves each sender to a `Person` before routing: a listed Slack,
Discord or email id is that person, and so is a Slack user whose address (from
`users.info`, when the token has `users:read.email`) is one a person lists; that
link is kept in the store. Anyone else is a person named by their platform id.

A person's time zone is the one they stated ("I'm in Berlin"; kept in the store),
else their `[[people]]` entry's, else `SWITCHBOARD_TIMEZONE`. The directory also
remembers who spoke last in each conversation, so tools that act for "the person
of this conversation" (a reminder's time zone) know whom they serve: in the store
for every conversation, in memory for the latest ones (never forgotten: review #8).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from bot.core.bounded import Bounded
from bot.core.messages import Sender
from bot.core.names import operator_conversation, platform_id
from bot.inbox.last_spoke import LastSpoke
from bot.store.core import Store
from config.entries import PersonConfig

_ZONE_KEY = "people:zone:"
_LINK_KEY = "people:link:"
_SPEAKER_KEY = "people:speaker:"
_SPEAKER_ID_KEY = "people:speaker-id:"
#: `people:in:<platform id>\x1f<conversation>`: the conversations a person spoke in
_IN_KEY = "people:in:"
_SEP = "\x1f"
_SPEAKERS_MAX = 10_000
#: conversation -> the latest speaker (a name, a platform id)
_Recent = Bounded[str, str]


@dataclass(frozen=True, slots=True)
class Person:
    name: str  # as configured, or the platform id of an unlisted sender
    timezone: str  # the effective IANA zone
    listed: bool = False

    @property
    def key(self) -> str:
        """The stem of the person's profile file (`<data_dir>/people/<key>.md`)."""
        return profile_key(self.name)


def profile_key(name: str) -> str:
    """A person's name (or platform id) as a file stem: lower case, no path."""
    slug = re.sub(r"[^a-z0-9@._+-]+", "-", name.strip().lower()).strip("-.")[:120]
    return slug or "someone"


class People:
    """The directory of people of one data dir."""

    def __init__(self, entries: list[PersonConfig], store: Store | None, default_zone: str):
        self.store = store
        self.default_zone = default_zone
        self._entries = {p.name.lower(): p for p in entries}
        self._ids: dict[tuple[str, str], str] = {}
        for person in entries:
            for kind, ident in person.ids():
                self._ids[(kind, ident.lower() if kind == "email" else ident)] = person.name
        self._emails = {addr: p.name for p in entries for addr in p.email}
        #: person -> zone, platform id -> listed person: one per person of the team who
        #: stated a zone or whose account was linked by email (bounded by the team)
        self._zones: dict[str, str] = {}
        self._links: dict[str, str] = {}
        if store is not None:
            self._zones = {k: v for k, v in store.kv_prefixed(_ZONE_KEY).items() if _valid(v)}
            self._links = store.kv_prefixed(_LINK_KEY)
        #: conversation -> who spoke last (name, platform id): at most _SPEAKERS_MAX
        self._speakers: Bounded[str, str] = Bounded(_SPEAKERS_MAX)
        self._speaker_ids: Bounded[str, str] = Bounded(_SPEAKERS_MAX)
        #: (platform id, conversation) written: at most _SPEAKERS_MAX, then it starts over
        self._in: set[tuple[str, str]] = set()
        #: when each platform id last spoke (`catchup` reads since then)
        self.last = LastSpoke(store)
        if store is not None:  # who spoke last where, across restarts (reminders' zones)
            # bounded from the start: the store keeps every conversation, memory at most
            # _SPEAKERS_MAX of them (a month of conversations would otherwise all load)
            self._speakers.update(store.kv_prefixed(_SPEAKER_KEY))
            self._speaker_ids.update(store.kv_prefixed(_SPEAKER_ID_KEY))

    # -- resolving ---------------------------------------------------------------------
    def resolve(self, channel: str, sender: Sender) -> Person:
        ident = sender.id.lower() if channel == "email" else sender.id
        name = self._ids.get((channel, ident)) or self._links.get(f"{channel}:{ident}")
        if name is None and sender.email:
            name = self._link(channel, ident, sender.email.lower())
        if name is None:
            return Person(sender.id, self.zone_of(sender.id))
        return Person(name, self.zone_of(name), listed=True)

    def wants_email(self, channel: str, ident: str) -> bool:
        """Whether looking up this id's email address could link it to a person."""
        if not self._emails or (channel, ident) in self._ids:
            return False
        return f"{channel}:{ident}" not in self._links

    def _link(self, channel: str, ident: str, email: str) -> str | None:
        name = self._emails.get(email)
        if name is not None:
            self._links[f"{channel}:{ident}"] = name
            if self.store is not None:
                self.store.set_kv(f"{_LINK_KEY}{channel}:{ident}", name)
        return name

    def named(self, name: str) -> Person | None:
        """A listed person by name (any case), or by one of their ids."""
        entry = self._entries.get(name.strip().lower())
        if entry is not None:
            return Person(entry.name, self.zone_of(entry.name), listed=True)
        text = name.strip().lower()
        for (_kind, ident), owner in self._ids.items():
            if ident.lower() == text:
                return Person(owner, self.zone_of(owner), listed=True)
        return None

    def listed(self) -> list[str]:
        return sorted((p.name for p in self._entries.values()), key=str.lower)

    def ids_of(self, name: str) -> list[tuple[str, str]]:
        """Every (platform, id) known for a person: configured and linked."""
        entry = self._entries.get(name.lower())
        ids = entry.ids() if entry is not None else []
        linked = [tuple(k.split(":", 1)) for k, v in self._links.items() if v == name]
        return [*ids, *((k, i) for k, i in linked)]

    # -- time zones --------------------------------------------------------------------
    def zone_of(self, name: str | None) -> str:
        if not name:
            return self.default_zone
        stated = self._zones.get(name.lower())
        if stated:
            return stated
        entry = self._entries.get(name.lower())
        if entry is not None and entry.timezone:
            return entry.timezone
        return self.default_zone

    def set_zone(self, name: str, zone: str) -> bool:
        """Record the zone a person stated; False when it is no IANA zone."""
        if not _valid(zone):
            return False
        self._zones[name.lower()] = zone
        if self.store is not None:
            self.store.set_kv(_ZONE_KEY + name.lower(), zone)
        return True

    # -- who speaks where ----------------------------------------------------------------
    def spoke(self, conversation: str | None, name: str, ident: str | None = None) -> None:
        """`name` (platform id `ident`, see `platform_id`) spoke in `conversation`
        (stored only when the speaker changes)."""
        if conversation is None:
            return
        self._remember(self._speakers, _SPEAKER_KEY, conversation, name)
        if ident is not None:
            self._remember(self._speaker_ids, _SPEAKER_ID_KEY, conversation, ident)
            self._joined(ident, conversation)
            self.last.spoke(ident)

    def last_spoke(self, idents: Iterable[str]) -> float | None:
        """When any of these platform ids last spoke to the bot (None: never, or not
        since `catchup` began recording it)."""
        return self.last.last(idents)

    def speakers(self) -> dict[str, float]:
        """Every platform id that ever spoke (since catchup began recording), with when
        it last did."""
        return self.last.every()

    def idents_of(self, who: str) -> set[str]:
        """The platform ids of a listed person (by name or by one of their ids), else
        `who` itself (`slack:U123`)."""
        person = self.named(who)
        kind, _, raw = who.partition(":")
        if person is None and raw:
            person = self.resolve(kind, Sender(raw))
        if person is None or not person.listed:
            return {who}
        return {platform_id(k, i) for k, i in self.ids_of(person.name)} | ({who} if raw else set())

    def _joined(self, ident: str, conversation: str) -> None:
        """Record once that `ident` spoke in `conversation` (what is theirs to see)."""
        if (ident, conversation) in self._in:
            return
        if len(self._in) >= _SPEAKERS_MAX:
            self._in.clear()  # only a cache of what the store holds: rewritten at worst
        self._in.add((ident, conversation))
        if self.store is not None:
            self.store.set_kv(f"{_IN_KEY}{ident}{_SEP}{conversation}", "1")

    def conversations_of(self, idents: Iterable[str]) -> set[str]:
        """Every conversation any of these platform ids spoke in (`slack:U123`)."""
        wanted = set(idents)
        found = {c for i, c in self._in if i in wanted}
        # and where they spoke last (what a data dir from before `people:in:` holds)
        found |= {c for c, i in self._speaker_ids.items() if i in wanted}
        if self.store is not None:
            for ident in wanted:
                found |= set(self.store.kv_prefixed(f"{_IN_KEY}{ident}{_SEP}"))
        return found

    def _remember(self, where: _Recent, prefix: str, conversation: str, value: str) -> None:
        if where.get(conversation) == value:
            return
        where[conversation] = value  # the oldest leaves (the store still holds it)
        if self.store is not None:
            self.store.set_kv(prefix + conversation, value)

    def _recall(self, where: _Recent, prefix: str, conversation: str | None) -> str | None:
        """Who spoke last, from memory, else from the store: the memory keeps the latest
        `_SPEAKERS_MAX` conversations, the store every one, so a speaker pushed out of
        memory (by thousands of cheap messages) is never forgotten (review #8)."""
        found = where.get(conversation or "")
        if found is not None or not conversation or operator_conversation(conversation):
            return found  # the operator's own work has no speaker: no lookup
        found = self.store.get_kv(prefix + conversation) if self.store is not None else None
        if found is not None:
            where[conversation] = found
        return found

    def speaker_id_of(self, conversation: str | None) -> str | None:
        """The platform id of who spoke last in `conversation` (`slack:U123`)."""
        return self._recall(self._speaker_ids, _SPEAKER_ID_KEY, conversation)

    def speaker_of(self, conversation: str | None) -> Person | None:
        name = self._recall(self._speakers, _SPEAKER_KEY, conversation)
        if name is None:
            return None
        return Person(name, self.zone_of(name), listed=name.lower() in self._entries)


def _valid(zone: str) -> bool:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


@lru_cache(maxsize=1)
def _cities() -> dict[str, str]:
    """City (the last part of an IANA name, lower case, spaces for underscores) -> zone."""
    out: dict[str, str] = {}
    for name in sorted(available_timezones()):
        if "/" not in name or name.startswith(("Etc/", "SystemV/", "US/")):
            continue
        out.setdefault(name.rsplit("/", 1)[1].replace("_", " ").lower(), name)
    return out


def zone_for_place(place: str) -> str | None:
    """'Europe/Berlin', 'berlin' or 'New York' -> an IANA zone; None when unknown."""
    text = place.strip().strip(".!,;").strip()
    if not text:
        return None
    if "/" in text or text.upper() == "UTC":
        for name in (text, "/".join(p.capitalize() for p in text.split("/"))):
            if _valid(name):
                return "UTC" if name.upper() == "UTC" else name
        text = text.rsplit("/", 1)[-1].replace("_", " ")
    return _cities().get(" ".join(text.lower().split()))
