"""Who a worker works for: the person who asked for its task, and everyone who spoke
to it since it started (docs/security.md: every conversation is its own).

A gated call's requester is the person whose message the step handles: a person who
spoke to the worker, else the one who asked for its task. Nobody who spoke to the
worker may approve its calls unless listed as an approver, so nobody talks a worker
into a call and approves it themselves. Kept in the store's key/value rows beside the
worker (written with its checkpoint), so a restart forgets nobody.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agents.loop.step import asker_of
from bot.core.messages import BusMessage
from bot.core.names import platform_id
from bot.inbox.people import People
from bot.store.core import Store

_KEY = "worker-people:"
Asker = tuple[str, str | None]


@dataclass(slots=True)
class WorkerPeople:
    #: (person, platform id) of who asked for the task; None: nobody known
    asked_by: Asker | None = None
    #: the names (listed people) and platform ids of everyone who spoke to it
    spoke: list[str] = field(default_factory=list)
    dirty: bool = False

    @classmethod
    def load(cls, store: Store, worker_id: str) -> WorkerPeople:
        raw = store.get_kv(_KEY + worker_id)
        try:
            data = json.loads(raw) if raw else {}
            asked = data.get("asked_by")
            asked_by = (str(asked[0]), asked[1]) if asked else None
            return cls(asked_by, [str(s) for s in data.get("spoke", [])])
        except (ValueError, TypeError, IndexError, AttributeError):
            return cls()  # unreadable: nobody is known, the most restricted

    @classmethod
    def start(cls, asked_by: Asker | None, people: People) -> WorkerPeople:
        found = cls(asked_by, dirty=True)
        if asked_by is not None:
            found.add(*asked_by, people)
        return found

    def heard(self, msg: BusMessage, people: People) -> None:
        asker = asker_of(msg)
        if asker is not None:
            self.add(*asker, people)

    def add(self, name: str, ident: str | None, people: People) -> None:
        listed = people.named(name) is not None
        for who in (name if listed else None, ident):
            if who and who not in self.spoke:
                self.spoke.append(who)
                self.dirty = True

    def owners(self, people: People) -> frozenset[str]:
        """The platform ids of who asked for the task: every id of a listed person."""
        if self.asked_by is None:
            return frozenset()
        name, ident = self.asked_by
        listed = people.ids_of(name) if people.named(name) is not None else []
        return frozenset({*(platform_id(k, i) for k, i in listed), *([ident] if ident else [])})

    def save(self, store: Store, worker_id: str) -> None:
        """Inside the caller's transaction, when something changed."""
        if self.dirty:
            data = {"asked_by": list(self.asked_by) if self.asked_by else None, "spoke": self.spoke}
            store.set_kv(_KEY + worker_id, json.dumps(data))
            self.dirty = False
