"""Scope: what an agent working for one conversation may reach (docs/security.md).

A conversation's files (what people sent in it), the workspaces of its agents and its
mail journal belong to it. An agent serving a conversation reads and sends those
freely; reaching anything else is a *crossing*: another conversation's file, a channel
or mail thread the asking person is not part of, a delivery target outside the open
ones (the current conversation, the asking person, a `[[people]]` entry, a channel the
person can post in, `SWITCHBOARD_TARGETS`, `SWITCHBOARD_HOME`, a `[[schedules]]`
target). A crossing needs a person's yes (`SWITCHBOARD_CROSS_SCOPE=approval`, the
default) or is refused (`deny`); either way it is a `scope.crossed` event.

Platform membership is asked of the channel adapters through `Membership` (Slack
`conversations.members`, Discord permissions), cached for `ttl` seconds; an adapter
that cannot say counts as "not a member" (fail closed). This module touches the
store's key/value rows only (file ownership) and never imports a channel.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from bot.core.events import EventLog
from bot.core.messages import Target
from bot.core.names import operator_conversation
from bot.inbox.people import People
from bot.inbox.places import same_place
from bot.store.core import Store

Mode = Literal["approval", "deny"]
Outcome = Literal["allowed", "approval", "denied"]
MEMBERSHIP_TTL = 60.0
#: membership answers kept before the cache starts over (bounded memory)
SCOPE_CACHE_MAX = 10_000
GRANT_TTL = 3600.0  # an approval given for a tool that parks holds this long (ask_human)
_OWNER_KEY = "scope:file:"
_SEP = "\x1f"
#: targets nobody outside the bot reads: the local console
_LOCAL = frozenset({"terminal"})


@runtime_checkable
class Membership(Protocol):
    """What a channel adapter answers about its platform: may this user read (post in)
    this target? None when it cannot tell (the caller treats that as no)."""

    async def can_read(self, user_id: str, target: Target) -> bool | None: ...

    async def can_post(self, user_id: str, target: Target) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class Asker:
    """Whom an agent's step works for: the conversation and the person speaking in it."""

    conversation: str | None
    person: str | None = None
    #: the person's (platform, id) pairs, e.g. ("slack", "U1"), ("email", "ann@x.org")
    ids: tuple[tuple[str, str], ...] = ()
    #: workspace names below <data_dir>/workspaces that belong to the conversation
    workspaces: frozenset[str] = field(default_factory=frozenset)
    #: the operator's own work (a config trigger's, `home`): nobody's conversation. A
    #: person's conversation whose speaker is unknown is never this: it is the most
    #: restricted asker, no person at all (scope never fails open)
    operator: bool = False

    def ids_on(self, kind: str) -> list[str]:
        return [ident for k, ident in self.ids if k == kind]


@dataclass(frozen=True, slots=True)
class Crossing:
    """What a call reaches outside its conversation, and why that is a crossing."""

    resource: str
    why: str


class FileOwners:
    """Which conversations a saved file (`files/<hash>/<name>`) came from."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, conversation: str, paths: Iterable[str]) -> None:
        for path in paths:
            self.store.set_kv(f"{_OWNER_KEY}{conversation}{_SEP}{path}", "1")

    def owns(self, conversation: str | None, path: str) -> bool:
        return conversation is not None and bool(
            self.store.get_kv(f"{_OWNER_KEY}{conversation}{_SEP}{path}")
        )

    def paths(self, conversation: str | None) -> set[str]:
        if conversation is None:
            return set()
        return set(self.store.kv_prefixed(f"{_OWNER_KEY}{conversation}{_SEP}"))  # prefix cut


class Scope:
    """The policy: checks, the membership cache and the `scope.crossed` events."""

    def __init__(
        self,
        people: People,
        owners: FileOwners,
        channels: Mapping[str, object],
        events: EventLog,
        *,
        open_targets: Iterable[str] = (),
        readable: Iterable[str] = (),
        mode: Mode = "approval",
        ttl: float = MEMBERSHIP_TTL,
    ) -> None:
        self.people = people
        self.owners = owners
        self.channels = channels
        self.events = events
        self.open_targets = {_canon(t) for t in open_targets}
        self.readable = {_canon(t) for t in readable}
        self.mode: Mode = mode
        self.ttl = ttl
        #: bounded: at SCOPE_CACHE_MAX answers it starts over (answers live `ttl` anyway)
        self._cache: dict[tuple[str, str, str], tuple[float, bool]] = {}
        #: (conversation, tool, resource, digest) -> until when: one per call an approver
        #: allowed ahead; bounded: the expired leave when one is added (they live an hour)
        self._grants: dict[tuple[str | None, str, str, str], float] = {}

    # -- who asks ----------------------------------------------------------------------
    def asker(self, conversation: str | None, workspaces: Iterable[str] = ()) -> Asker:
        person = self.people.speaker_of(conversation)
        if person is None:
            operator = operator_conversation(conversation)
            return Asker(conversation, workspaces=frozenset(workspaces), operator=operator)
        ids = self.people.ids_of(person.name) if person.listed else []
        if not person.listed and conversation:  # an unlisted person is their platform id
            spoke = self.people.speaker_id_of(conversation)  # as recorded: `api:ci`, not
            kind, _, ident = (spoke or "").partition(":")  # `api:api:ci`; an email lower-cased
            ids = [(kind, ident) if ident else (_kind_of(conversation), person.name)]
        return Asker(conversation, person.name, tuple(ids), frozenset(workspaces))

    # -- checks ------------------------------------------------------------------------
    async def send(self, asker: Asker, target: Target, here: Target | None) -> Crossing | None:
        """None when `target` is an open place for this asker to send to."""
        if self._open(asker, target, here) or await self._member(asker, target, post=True):
            return None
        who = asker.person or "nobody in this conversation"
        return Crossing(str(target), f"{target} is not a place open to {who}")

    async def read(self, asker: Asker, target: Target, here: Target | None) -> Crossing | None:
        """None when the asking person is part of the channel or thread `target` (or no
        channel serves it: the tool says it cannot read there). A target open to send to
        (SWITCHBOARD_HOME, a `[[schedules]]` one) is open to read only for the operator's
        own work (a config trigger's turn), never for a conversation whose person is not
        known; `readable` ones (SWITCHBOARD_TARGETS) always."""
        if target.kind not in self.channels or same_place(target, here):
            return None
        text = _canon(str(target))
        if text in self.readable or (asker.operator and text in self.open_targets):
            return None
        if await self._member(asker, target, post=False):
            return None
        who = asker.person or "nobody in this conversation"
        return Crossing(str(target), f"{who} is not part of {target}")

    def path(self, asker: Asker, shown: str) -> Crossing | None:
        """`shown` is a data-dir path (files/..., workspaces/...) the agent reaches."""
        parts = shown.strip("/").split("/")
        if parts[0] == "files" and len(parts) >= 2:
            if self._owned_file(asker, parts):
                return None
            return Crossing(shown, "that file came from another conversation")
        if parts[0] == "workspaces" and len(parts) >= 3:
            if "/".join(parts[1:3]) in asker.workspaces:
                return None
            return Crossing(shown, "that workspace belongs to another conversation")
        if parts[0] in ("files", "workspaces"):  # the whole shared area
            return Crossing(shown, "it holds every conversation's files")
        return None

    def _owned_file(self, asker: Asker, parts: list[str]) -> bool:
        if len(parts) >= 3:
            return self.owners.owns(asker.conversation, "/".join(parts[:3]))
        folder = "/".join(parts[:2]) + "/"
        return any(p.startswith(folder) for p in self.owners.paths(asker.conversation))

    # -- approvals given ahead ---------------------------------------------------------
    def grant(self, conversation: str | None, tool: str, resource: str, digest: str) -> None:
        """An approver said yes to this very call (a tool that parks, ask_human, reaching
        `resource` with the arguments of `digest`) from this conversation: called again,
        it passes (in memory, an hour). Nothing else passes on it: not another tool
        reaching the same place (read_channel), not other arguments (review #13)."""
        now = time.monotonic()
        self._grants = {key: until for key, until in self._grants.items() if until > now}
        self._grants[(conversation, tool, resource, digest)] = now + GRANT_TTL

    def granted(self, conversation: str | None, tool: str, resource: str, digest: str) -> bool:
        until = self._grants.get((conversation, tool, resource, digest))
        return until is not None and until > time.monotonic()

    # -- reporting ---------------------------------------------------------------------
    def outcome(self, approved: bool) -> Outcome:
        return "allowed" if approved else ("approval" if self.mode == "approval" else "denied")

    def crossed(
        self, agent: str, asker: Asker, tool: str, crossing: Crossing, outcome: Outcome
    ) -> None:
        person_id = ":".join(asker.ids[0]) if asker.ids else None
        self.events.emit(
            "scope.crossed", agent, conversation=asker.conversation, person=asker.person,
            person_id=person_id, tool=tool, resource=crossing.resource, outcome=outcome,
        )  # fmt: skip

    # -- the parts ---------------------------------------------------------------------
    def _open(self, asker: Asker, target: Target, here: Target | None) -> bool:
        text = _canon(str(target))
        if target.kind in _LOCAL or same_place(target, here) or text in self.open_targets:
            return True
        if target.address in asker.ids_on(target.kind) or _low(target) in _lows(asker, target):
            return True  # the asking person themself
        return self._listed(target)

    def _listed(self, target: Target) -> bool:
        """A `[[people]]` entry's own address or id (not a channel they are in)."""
        if target.thread:
            return False
        for name in self.people.listed():
            ids = self.people.ids_of(name)
            if any(k == target.kind and _eq(k, i, target.address) for k, i in ids):
                return True
        return False

    async def _member(self, asker: Asker, target: Target, post: bool) -> bool:
        if target.kind == "email":  # the thread's participants: that address and the bot
            return any(_eq("email", i, target.address) for i in asker.ids_on("email"))
        channel = self.channels.get(target.kind)
        if not isinstance(channel, Membership):
            return False
        for user in asker.ids_on(target.kind):
            if await self._cached(channel, user, target, post):
                return True
        return False

    async def _cached(self, channel: Membership, user: str, target: Target, post: bool) -> bool:
        key = (user, str(target.in_thread(None)), "post" if post else "read")
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        ask = channel.can_post if post else channel.can_read
        answer = bool(await ask(user, target))
        if len(self._cache) >= SCOPE_CACHE_MAX:
            self._cache.clear()
        self._cache[key] = (now + self.ttl, answer)
        return answer


def _kind_of(conversation: str) -> str:
    return conversation.split(":", 1)[0] if ":" in conversation else conversation


def _canon(text: str) -> str:
    try:
        target = Target.parse(text)
    except ValueError:
        return text.strip()
    return _low(target) if target.kind == "email" else str(target)


def _low(target: Target) -> str:
    return str(target).lower() if target.kind == "email" else str(target)


def _lows(asker: Asker, target: Target) -> list[str]:
    return [f"email:{i.lower()}" for i in asker.ids_on("email")] if target.kind == "email" else []


def _eq(kind: str, a: str, b: str) -> bool:
    return a.lower() == b.lower() if kind == "email" else a == b
