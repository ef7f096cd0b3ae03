"""The answer receipt end to end: a real dovecot (IMAP IDLE, LMTP), an aiosmtpd relay,
the real app. A worker asks by mail; the person's answer is acknowledged in the
question's thread, once, by the runtime, before the worker's result arrives.
"""

from __future__ import annotations

from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.email.person import body_text, from_of
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.script import TeamScript

RECEIPT = "Alice has your answer and is working on it; you will hear back here."


async def test_an_answer_by_mail_is_acknowledged_once_in_its_thread(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    ann = world.ann
    script = TeamScript(via=f"email:{ann.address}")
    fake.responder = script
    async with email_app(world.settings(tmp_path, fake)) as app:
        await ann.send(ann.compose(world.bot, "GPU research", "please research GPUs for us"))
        (question,) = await ann.wait_mail(1, match="asks")
        answer = ann.reply_quoting(question, "Data center only, please.", world.bot)
        await ann.send(answer)
        (receipt,) = await ann.wait_mail(1, match="has your answer")
        await ann.wait_mail(1, match="Report based on")
        await ann.send(answer)  # the same mail again (a client's resend, a second copy)
        await ann.send(ann.compose(world.bot, "ping", "anything new?"))
        await ann.wait_mail(1, match="anything new?")
        assert app.store.agents.open_questions() == []
    assert body_text(receipt).strip() == RECEIPT
    assert from_of(receipt) == ("Switchboard", world.bot)
    assert receipt["Subject"] == "Re: Alice asks: Data center or consumer GPUs?"
    assert receipt["In-Reply-To"] == answer["Message-ID"]
    assert receipt["References"].split() == [question["Message-ID"], answer["Message-ID"]]
    assert receipt["Auto-Submitted"] == "auto-replied"  # responders do not answer it
    receipts = [m for m in await ann.inbox() if "has your answer" in body_text(m)]
    assert len(receipts) == 1
    assert script.answers_seen == ["Data center only, please."]
