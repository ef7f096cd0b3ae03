"""The message bus: one mailbox per node, durable through the store.

`send` writes the message to the store's mail table first, then wakes the
recipient's mailbox; a node wakes on arrival (no polling tick). Mail for a node
that is not registered yet (a worker being restored) is held and handed over when
it registers. A recipient deletes mail from the store when it has consumed it (in
the same transaction as its conversation checkpoint), so a crash redelivers
exactly what was not consumed. Swapping this for Redis streams is one module.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.core.messages import BusMessage


@dataclass(slots=True)
class Mail:
    id: int
    msg: BusMessage


class MailStore(Protocol):
    """Where the bus keeps mail until it is consumed (the store's mail table)."""

    def put_mail(self, msg: BusMessage) -> int: ...

    def all_mail(self) -> list[tuple[int, BusMessage]]: ...


class Mailbox:
    """A node's inbox: put from anywhere on the loop, await or drain in the node."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self._items: deque[Mail] = deque()
        self._ready = asyncio.Event()

    def put(self, mail: Mail) -> None:
        self._items.append(mail)
        self._ready.set()

    def drain(self) -> list[Mail]:
        items = list(self._items)
        self._items.clear()
        self._ready.clear()
        return items

    async def wait(self) -> list[Mail]:
        """Block until mail arrives, then take all of it."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self.drain()

    def __len__(self) -> int:
        return len(self._items)


#: takes a mail before its recipient's mailbox does (a person's `stop`): True if taken
Catcher = Callable[[Mail], bool]


class Bus:
    def __init__(self, store: MailStore) -> None:
        self.store = store
        self._boxes: dict[str, Mailbox] = {}
        self._held: dict[str, list[Mail]] = {}
        #: asked in turn before any mail is handed over (agents/team/stop.py adds one)
        self.catchers: list[Catcher] = []

    def register(self, node_id: str) -> Mailbox:
        box = self._boxes.get(node_id)
        if box is None:
            box = self._boxes[node_id] = Mailbox(node_id)
            for mail in self._held.pop(node_id, []):
                box.put(mail)
        return box

    def unregister(self, node_id: str) -> list[Mail]:
        """Remove a node's mailbox; returns the mail it had not taken yet."""
        box = self._boxes.pop(node_id, None)
        return (box.drain() if box is not None else []) + self._held.pop(node_id, [])

    def orphans(self) -> list[Mail]:
        """Take the held mail of nodes that did not come back after a restart."""
        mail = [m for items in self._held.values() for m in items]
        self._held.clear()
        return mail

    def send(self, msg: BusMessage) -> int:
        mail = Mail(self.store.put_mail(msg), msg)
        self._hand(mail)
        return mail.id

    def restore(self) -> int:
        """Hand out every unconsumed mail from before a restart."""
        pending = self.store.all_mail()
        for mail_id, msg in pending:
            self._hand(Mail(mail_id, msg))
        return len(pending)

    def _hand(self, mail: Mail) -> None:
        if any(catch(mail) for catch in self.catchers):
            return
        box = self._boxes.get(mail.msg.recipient)
        if box is not None:
            box.put(mail)
        else:
            self._held.setdefault(mail.msg.recipient, []).append(mail)
