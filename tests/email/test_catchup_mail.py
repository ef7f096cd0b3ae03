"""`catchup` by mail: a verified person's mail with the subject `catchup` is answered by
mail with what the agents said to them since they last spoke, through the outbox, once
per Message-ID; no agent reads it; a sender nobody verified gets nothing.

The rules run through the email channel's inbound path against a real store (as
test_receipt_rules does); the whole path once against dovecot and the SMTP relay.
"""

from __future__ import annotations

import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

from bot.core.messages import Outbound
from bot.store.core import QuestionRow, Store
from tests.email.conftest import MailWorld, email_app
from tests.email.person import body_text
from tests.email.test_receipt_rules import ANN, BOT, Node
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.script import TeamScript


def _mail(subject: str, text: str = "") -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = f"Ann <{ANN}>"
    mail["To"] = BOT
    mail["Subject"] = subject
    mail["Message-ID"] = make_msgid(domain="example.com")
    mail.set_content(text or "\n")
    return mail


def _catchups(store: Store) -> list[Outbound]:
    rows = store.outbox.pending_outbox(f"email:{ANN}", 50)
    return [r.message for r in rows if r.message.id.startswith("catchup-")]


async def test_a_catchup_mail_is_answered_once_by_mail_without_an_agent(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    node = Node(tmp_path, store)
    hello = _mail("GPUs", "please research GPUs")
    await node.receive(hello)
    conversation = f"email:{hello['Message-ID']}"
    question = "Data center or consumer GPUs?"
    row = QuestionRow(
        "q1", "alice", question, f"email:{ANN}", conversation, [], "open", time.time()
    )
    node.human.open_question(row)
    journaled = len(store.inbound_between(0, time.time() + 1))
    ask = _mail("Catchup")
    await node.receive(ask)
    await node.receive(ask)  # the same mail delivered twice
    (answer,) = _catchups(store)
    assert answer.kind == "notice" and answer.meta["subject"] == "Re: Catchup"
    assert answer.text.startswith("Since you last spoke to me (")
    assert "Alice asks (waiting for you) in email:" in answer.text
    assert "Data center or consumer GPUs?" in answer.text
    assert len(store.inbound_between(0, time.time() + 1)) == journaled  # no agent reads it
    store.close()


async def test_a_catchup_from_a_sender_nobody_verified_gets_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    node = Node(tmp_path, store, EMAIL_AUTHSERV_ID="", EMAIL_UNVERIFIED="accept")
    await node.receive(_mail("catchup"))
    assert _catchups(store) == []
    store.close()


async def test_catchup_by_mail_end_to_end(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    ann = world.ann
    fake.responder = TeamScript(via=f"email:{ann.address}")
    async with email_app(world.settings(tmp_path, fake)):
        await ann.send(ann.compose(world.bot, "GPU research", "please research GPUs for us"))
        await ann.wait_mail(1, match="asks")
        calls = len(fake.calls)
        ask = ann.compose(world.bot, "catchup", "")
        await ann.send(ask)
        (answer,) = await ann.wait_mail(1, match="Since you last spoke")
        await ann.send(ask)  # a second copy
        await ann.send(ann.compose(world.bot, "ping", "anything new?"))
        await ann.wait_mail(1, match="anything new?")
        assert len(fake.calls) > calls  # the ping's, none for the catchups
        assert not any("Since you last" in c.all_text for c in fake.calls)
    assert answer["Subject"] == "Re: catchup"
    assert "Alice asks (waiting for you)" in body_text(answer)
    assert "Data center or consumer GPUs?" in body_text(answer)
    answers = [m for m in await ann.inbox() if "Since you last spoke" in body_text(m)]
    assert len(answers) == 1
