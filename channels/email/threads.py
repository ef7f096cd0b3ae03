"""Email threads as conversations, each bound to the people of its first mail.

A thread is one conversation, `email:<root Message-ID>`, and belongs to the addresses
of its first mail: From, To and Cc (our own first mail: its recipient). A mail joins
the thread it answers only when its sender is one of them. Anyone else who names the
thread (a Message-ID is no secret: whoever was copied has it) starts a conversation of
their own, keyed by their mail, and is never "the person asking" there. The references
handed to the core are only those of the thread the mail is in, so a mail answers no
question and decides no approval of another thread. One exception: a reply to an
approval request mail itself keeps that reference, and the approval desk decides
whether its sender may decide (they hold the mail and its secret code). A thread
recorded before participants were (an older version) is bound to its last speaker.

Our own Message-IDs are keyed (an HMAC of the outbox id), so an outbox id seen in an
event tells nobody the Message-ID of a mail they never received.

State, in the store's key/value table: `email:thread:<conversation>` (a `Thread` as
JSON), `email:sent:<Message-ID>` (the conversation each mail of ours went out in, so
naming one of them names its thread), `email:request:<Message-ID>` (our approval
request mails), `email:message-key`.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import asdict, dataclass

from bot.seam import APPROVAL_CODE, ChannelStore, Outbound, People
from channels.email.compose import Thread, message_id_for, new_subject
from channels.email.parse import ParsedMail
from channels.email.safety import UNVERIFIED_ID

log = logging.getLogger(__name__)

KIND = "email"
THREAD_KEY = "email:thread:"
REQUEST_KEY = "email:request:"
SENT_KEY = "email:sent:"
MESSAGE_KEY = "email:message-key"
MAX_CHAIN = 50  # references looked up for a thread of ours
OWN_SCAN = 200  # our newest mails to one address searched for the one a reply quotes


@dataclass(slots=True)
class Place:
    """Where a mail belongs: its conversation, the thread it is in (to be saved with
    the mail), the references handed on, and how it got there."""

    conversation: str
    thread: Thread
    refs: list[str]
    adopt: bool = False  # a thread never seen here: its references become its own
    stranger: bool = False  # it answers a thread its sender is not part of


class Threads:
    def __init__(self, store: ChannelStore, people: People, own_address: str) -> None:
        self.store = store
        self.people = people
        self.own = own_address.lower()
        self._key: bytes | None = None

    # -- state -------------------------------------------------------------------------
    def get(self, conversation: str | None) -> Thread | None:
        if not conversation:
            return None
        raw = self.store.get_kv(THREAD_KEY + conversation)
        if raw is None:
            return None
        try:
            return Thread(**json.loads(raw))
        except (ValueError, TypeError):
            log.error("email thread state of %s is corrupt; answering in a new mail", conversation)
            return None

    def save(self, conversation: str, thread: Thread) -> None:
        self.store.set_kv(THREAD_KEY + conversation, json.dumps(asdict(thread)))

    def message_key(self) -> bytes:
        """The key our Message-IDs are made with: made once, kept in the store (every
        node, and a resend after a restart, makes the same id)."""
        if self._key is None:
            if self.store.get_kv(MESSAGE_KEY) is None:
                self.store.set_kv(MESSAGE_KEY, secrets.token_hex(32))
            self._key = bytes.fromhex(self.store.get_kv(MESSAGE_KEY) or "")
        return self._key

    # -- inbound -----------------------------------------------------------------------
    def place(self, mail: ParsedMail) -> Place:
        """The conversation `mail` belongs to (see the module's docstring)."""
        chain = list(dict.fromkeys([*mail.references, *mail.in_reply_to]))[:MAX_CHAIN]
        named = False
        for ref in chain:
            key = self.store.get_kv(SENT_KEY + ref) or f"{KIND}:{ref}"  # ours: its thread
            thread = self.get(key)
            if thread is None:
                continue
            named = True
            if self._joins(key, thread, mail.sender):
                kept = {*thread.refs, ref}
                return Place(key, thread, [r for r in mail.thread_refs if r in kept])
        own = Thread(mail.subject, participants=self.people_of(mail))
        if not chain:  # a new thread (or the same first mail read again)
            key = f"{KIND}:{mail.message_id}"
            return Place(key, self.get(key) or own, [])
        if not named:  # a thread we never saw (begun before an upgrade): from now on bound
            return Place(f"{KIND}:{chain[0]}", own, mail.thread_refs, adopt=True)
        return Place(f"{KIND}:{mail.message_id}", own, self._request(mail), stranger=True)

    def add(self, place: Place, mail: ParsedMail) -> None:
        """Keep `mail` in its thread (inside the caller's transaction)."""
        thread = place.thread
        thread.subject = thread.subject or mail.subject
        if place.adopt:
            for ref in [*mail.references, *mail.in_reply_to]:
                thread.add(ref)
        thread.add(mail.message_id)
        thread.cut = thread.cut or mail.cut
        self.save(place.conversation, thread)

    def people_of(self, mail: ParsedMail) -> list[str]:
        found = dict.fromkeys([mail.sender, *mail.recipients])
        return [address for address in found if address and address != self.own]

    def _joins(self, key: str, thread: Thread, sender: str) -> bool:
        if not thread.participants:  # recorded by an older version: its last speaker's
            last = self.people.speaker_id_of(key) or ""
            first = last.removeprefix(f"{KIND}:").removeprefix(UNVERIFIED_ID)
            thread.participants = [first if last.startswith(f"{KIND}:") else sender]
        return sender in thread.participants

    def _request(self, mail: ParsedMail) -> list[str]:
        """The request mail a stranger's mail replies to, if it is one of ours."""
        return [r for r in mail.in_reply_to if self.store.get_kv(REQUEST_KEY + r) is not None]

    def quoted_question(self, mail: ParsedMail) -> str | None:
        """The text of the worker's question mail that `mail` replies to (its
        In-Reply-To), when it went to `mail`'s sender among our newest OWN_SCAN mails to
        them; else None (a reply to any other mail of ours is read as it is)."""
        ref = next(iter(mail.in_reply_to), "")
        if not ref or self.store.get_kv(SENT_KEY + ref) is None:
            return None
        key = self.message_key()
        for _, sent in self.store.outbox.sent_to([f"{KIND}:{mail.sender}"], 0.0, OWN_SCAN):
            if message_id_for(sent, self.own, key) == ref:
                return sent.text if sent.kind == "question" else None
        return None

    # -- outbound ----------------------------------------------------------------------
    def thread_for(self, msg: Outbound) -> Thread | None:
        """The thread an outgoing mail answers in: its conversation's, when the mail goes
        to one of that thread's people; else None (a new mail, a thread of its own)."""
        thread = self.get(msg.conversation)
        address = msg.target.address.lower()
        if thread is not None and thread.participants and address not in thread.participants:
            return None
        return thread

    def sent(self, msg: Outbound, thread: Thread | None, message_id: str) -> None:
        """Record a mail we sent: in its thread, or as the first mail of a new one."""
        if thread is not None and msg.conversation:
            key = msg.conversation
            thread.add(message_id)
            thread.cut = False
        else:
            key = f"{KIND}:{message_id}"
            to = msg.target.address.lower()
            thread = Thread(new_subject(msg), [message_id], participants=[to])
        self.save(key, thread)
        self.store.set_kv(SENT_KEY + message_id, key)
        if msg.meta.get(APPROVAL_CODE):
            self.store.set_kv(REQUEST_KEY + message_id, msg.id)
