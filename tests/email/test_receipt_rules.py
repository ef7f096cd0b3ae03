"""The answer receipt's rules through the email channel's inbound path (parse, filter,
journal, route) against a real store, no mail server: a verified person's answer to a
worker's question gets one receipt in the outbox, keyed so a redelivery, a restart or a
re-route never queues a second; an auto-reply, list or bulk mail, an unverified sender,
`stop`, and a mail that answers no question get none.
"""

from __future__ import annotations

import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest

from bot.channel_context import ChannelContext
from bot.core.bus import Bus
from bot.core.events import EventLog
from bot.core.messages import BusMessage, Outbound
from bot.inbox.human import HumanNode
from bot.store.core import QuestionRow, Store
from channels.email import EmailChannel
from config.settings import Settings, load_settings
from tests.email.servers import MX, stamp

BOT = "bot@example.com"
ANN = "ann@example.com"
QUESTION_ID = "<q1@example.com>"


def _settings(tmp_path: Path, **extra: str) -> Settings:
    env = {
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "EMAIL_ADDRESS": BOT,
        "EMAIL_ALLOWED_SENDERS": "@example.com",
        "EMAIL_AUTHSERV_ID": MX,
        "IMAP_HOST": "127.0.0.1",
        "IMAP_USER": "bot",
        "IMAP_PASSWORD": "x",
        "SMTP_HOST": "127.0.0.1",
        **extra,
    }
    return load_settings(None, {k: v for k, v in env.items() if v})


class Node:
    """A human node and the email channel on one store, as a (re)started process has
    them: Alice runs and her question went out as mail `QUESTION_ID`."""

    def __init__(self, tmp_path: Path, store: Store, **extra: str) -> None:
        self.human = HumanNode(store, Bus(store), EventLog(None), None)
        self.channel = EmailChannel(_settings(tmp_path, **extra), ChannelContext(self.human))
        self.human.worker_started("alice", "Alice")
        self.store = store

    def ask(self) -> None:
        row = QuestionRow("q1", "alice", "Which region?", f"email:{ANN}", None, [QUESTION_ID],
                          "open", time.time())  # fmt: skip
        self.human.open_question(row)

    async def receive(self, mail: EmailMessage) -> None:
        raw = stamp(bytes(mail), ANN)
        await self.channel.handle(raw, len(raw))

    def queued(self) -> list[Outbound]:
        return [row.message for row in self.store.outbox.pending_outbox(f"email:{ANN}", 50)]

    def receipts(self) -> list[Outbound]:
        return [m for m in self.queued() if "has your answer" in m.text]


def _answer(text: str = "EU, please.", **headers: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = f"Ann <{ANN}>"
    mail["To"] = BOT
    mail["Subject"] = "Re: Alice asks: Which region?"
    mail["Message-ID"] = make_msgid(domain="example.com")
    mail["In-Reply-To"] = QUESTION_ID
    mail["References"] = QUESTION_ID
    for name, value in headers.items():
        mail[name] = value
    mail.set_content(f"{text}\n\nOn Mon, 1 Jan 2024 at 10:00, Alice wrote:\n> Which region?\n")
    return mail


def _to_alice(store: Store) -> list[BusMessage]:
    return [msg for _, msg in store.all_mail() if msg.recipient == "alice"]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db.sqlite")


async def test_an_answer_by_mail_gets_one_receipt_in_its_thread(
    tmp_path: Path, store: Store
) -> None:
    node = Node(tmp_path, store)
    node.ask()
    answer = _answer()
    await node.receive(answer)
    (receipt,) = node.receipts()
    assert receipt.text == "Alice has your answer and is working on it; you will hear back here."
    assert receipt.agent == "switchboard" and receipt.kind == "notice"
    assert receipt.conversation == f"email:{QUESTION_ID}"  # the answer's thread
    assert receipt.id.startswith("receipt-")
    (to_alice,) = _to_alice(store)
    assert to_alice.kind == "answer" and to_alice.text == "EU, please."

    await node.receive(answer)  # the same mail read again (a reconnect, a copy in INBOX)
    assert len(node.receipts()) == 1


async def test_a_restart_and_a_re_route_never_queue_a_second_receipt(
    tmp_path: Path, store: Store
) -> None:
    first = Node(tmp_path, store)
    first.ask()
    answer = _answer()
    await first.receive(answer)
    # a restarted process: the open question reloads, the mail is read once more
    again = Node(tmp_path, store)
    again.human.restore()
    await again.receive(answer)
    # and a route of the same mail the journal lost track of: the outbox key holds
    (row,) = store.recent_inbound("email", 0.0, time.time() + 1, 10)
    with store.tx():
        again.human._route(10_000, row)
    assert len(again.receipts()) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Auto-Submitted": "auto-replied"},
        {"Precedence": "bulk"},
        {"Precedence": "junk"},
        {"Precedence": "list"},
        {"X-Autoreply": "yes"},
        {"List-Id": "<team.example.com>"},
    ],
    ids=lambda h: next(iter(h.items()))[0] + "=" + next(iter(h.values())),
)
async def test_an_auto_reply_to_the_question_gets_no_receipt_and_answers_nothing(
    tmp_path: Path, store: Store, headers: dict[str, str]
) -> None:
    node = Node(tmp_path, store)
    node.ask()
    await node.receive(_answer("I am out of the office until Monday.", **headers))
    assert node.queued() == []
    assert [q.id for q in store.agents.open_questions()] == ["q1"]
    assert _to_alice(store) == []


async def test_an_unverified_sender_gets_no_receipt(tmp_path: Path, store: Store) -> None:
    node = Node(tmp_path, store, EMAIL_AUTHSERV_ID="", EMAIL_UNVERIFIED="accept")
    node.ask()
    await node.receive(_answer())
    assert node.receipts() == []
    assert _to_alice(store) == []  # nor is it taken as the answer


async def test_stop_and_mail_that_answers_no_question_get_no_receipt(
    tmp_path: Path, store: Store
) -> None:
    node = Node(tmp_path, store)
    await node.receive(_answer("EU, please."))  # no question open: the coordinator's
    node.ask()
    stop = _answer("@Alice stop")
    await node.receive(stop)
    assert node.receipts() == []
