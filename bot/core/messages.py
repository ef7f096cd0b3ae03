"""Message types of the core: delivery targets, inbound, outbound and bus messages.

Plain dataclasses, serialisable to JSON for the journal, the outbox and the bus.
Imports nothing of the project but the target grammar of `config`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from config.targets import TargetSyntaxError, split_target

HUMAN = "human"
COORDINATOR = "coordinator"
BROADCAST = "*"

#: What a bus message is: `human` (a person's message), `answer` (a person's answer to
#: an open question), `result` (a worker published), `suggestion`, `message` (agent to
#: agent), `notice` (runtime facts for the coordinator), `task` (a trigger waking an agent).
MessageKind = Literal["human", "answer", "result", "suggestion", "message", "notice", "task"]
#: the kinds that carry a person's own words
FROM_PERSON: tuple[MessageKind, ...] = ("human", "answer")
#: A person's bus message's meta key: the router decided it is a `stop` (bot/inbox/router.py
#: is the only place that decides it; agents/team/stop.py acts on it)
STOP = "stop"
#: An inbound message's meta key: the channel could not verify who sent it (email that
#: no receiving server vouched for, taken under EMAIL_UNVERIFIED=accept). Such a message
#: never decides an approval nor answers a question, and its sender is nobody listed.
UNVERIFIED = "unverified"
#: An inbound message's meta key: its channel shows nothing of the work under way (email)
#: and its sender may be written to (verified, not a machine). An answer to a worker's
#: question from such a message gets one runtime receipt in its thread (bot/inbox/human.py).
RECEIPT = "receipt"
#: What an outbox message is: an agent's `reply`, a worker's `question` (`ask_human`),
#: a runtime `notice`, or a `failure` report sent home (never reported again itself).
OutboundKind = Literal["reply", "question", "notice", "failure"]


class TargetError(ValueError):
    """A delivery target string that does not parse."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a message is delivered: `slack:C1/1700.1`, `email:a@b.c`, `terminal`, ..."""

    kind: str
    address: str = ""
    thread: str | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        """The one grammar (config/targets.py) that settings validation uses too."""
        try:
            return cls(*split_target(text))
        except TargetSyntaxError as exc:
            raise TargetError(str(exc)) from exc

    def __str__(self) -> str:
        if self.kind == "terminal":
            return "terminal"
        return f"{self.kind}:{self.address}" + (f"/{self.thread}" if self.thread else "")

    def in_thread(self, thread: str | None) -> Target:
        return Target(self.kind, self.address, thread)


@dataclass(slots=True)
class Attachment:
    """A file that travels with a message, in or out.

    Inbound: `source` is where the platform serves it (a Slack `url_private_download`,
    a Discord attachment URL; "" when the bytes came with the message, as in email)
    and `ref` the platform's file id. Once saved, `path` is the file relative to the
    data dir and `sha256` its content hash; `note` says why it was not saved or
    cannot be shown (too large, download failed). Outbound: `path` is the workspace
    file to attach, `name` what people see.
    """

    name: str
    content_type: str = "application/octet-stream"
    size: int = 0
    source: str = ""
    ref: str = ""
    path: str = ""
    sha256: str = ""
    note: str = ""

    @property
    def pending(self) -> bool:
        """Still to fetch: neither saved nor given up on."""
        return not self.path and not self.note

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", 0) or k == "name"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attachment:
        return cls(**data)


def _attachments(raw: Any) -> list[Attachment]:
    return [a if isinstance(a, Attachment) else Attachment.from_json(a) for a in raw or []]


@dataclass(slots=True)
class Sender:
    """The person behind a message, whatever the channel."""

    id: str
    name: str = ""
    is_bot: bool = False
    #: the address the platform reports for this account (Slack users.info), if any
    email: str = ""

    @property
    def display(self) -> str:
        return self.name or self.id


@dataclass(slots=True)
class Inbound:
    """A message from a person, as a channel hands it to the human node.

    `conversation` is the key of the human conversation (a Slack thread, a Discord
    thread or DM, an email thread, the terminal); `reply_to` is where answers go;
    `thread_refs` are the platform references this message answers (email
    In-Reply-To/References, a thread id), used to find a worker's open question.
    """

    channel: str
    message_id: str
    conversation: str
    sender: Sender
    text: str
    reply_to: Target
    thread_refs: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)
    attachments: list[Attachment] = field(default_factory=list)

    @property
    def unverified(self) -> bool:
        """Whether the channel could not verify the sender (see UNVERIFIED)."""
        return bool(self.meta.get(UNVERIFIED))

    def to_json(self) -> dict[str, Any]:
        s = self.sender
        return {
            "channel": self.channel,
            "message_id": self.message_id,
            "conversation": self.conversation,
            "text": self.text,
            "sender": {"id": s.id, "name": s.name, "is_bot": s.is_bot, "email": s.email},
            "reply_to": str(self.reply_to),
            "thread_refs": list(self.thread_refs),
            "meta": dict(self.meta),
            "received_at": self.received_at,
            "attachments": [a.to_json() for a in self.attachments],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Inbound:
        data = dict(data)
        data["sender"] = Sender(**data["sender"])
        data["reply_to"] = Target.parse(data["reply_to"])
        data["attachments"] = _attachments(data.get("attachments"))
        return cls(**data)


@dataclass(slots=True)
class Outbound:
    """A message from an agent to a person, queued in the durable outbox.

    `kind`: see `OutboundKind` (`question_id` set on a `question`). `meta` carries
    channel-specific threading facts (email subject and references, ...), filled in
    by whoever knows them.
    """

    agent: str
    target: Target
    text: str
    conversation: str | None = None
    kind: OutboundKind = "reply"
    question_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    attachments: list[Attachment] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "target": str(self.target),
            "text": self.text,
            "conversation": self.conversation,
            "kind": self.kind,
            "question_id": self.question_id,
            "meta": dict(self.meta),
            "id": self.id,
            "attachments": [a.to_json() for a in self.attachments],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outbound:
        data = dict(data)
        data["target"] = Target.parse(data["target"])
        data["attachments"] = _attachments(data.get("attachments"))
        return cls(**data)


@dataclass(slots=True)
class BusMessage:
    """What travels between nodes: human -> agent, agent -> agent.

    `kind`: see `MessageKind` (`question_id` set on an `answer`).
    """

    sender: str
    recipient: str
    text: str
    kind: MessageKind = "message"
    conversation: str | None = None
    inbound_id: int | None = None
    question_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "sender": self.sender,
            "recipient": self.recipient,
            "text": self.text,
            "kind": self.kind,
            "conversation": self.conversation,
            "inbound_id": self.inbound_id,
            "question_id": self.question_id,
            "meta": dict(self.meta),
            "attachments": [a.to_json() for a in self.attachments],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BusMessage:
        data = dict(data)
        data["attachments"] = _attachments(data.get("attachments"))
        return cls(**data)


@dataclass(slots=True)
class DeliveryReceipt:
    """What a channel reports after delivering: the platform's id for the message."""

    platform_id: str | None = None
    thread: str | None = None
    refs: list[str] = field(default_factory=list)
