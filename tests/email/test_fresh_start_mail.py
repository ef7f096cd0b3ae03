"""`new` as the whole reply in an email thread starts that thread afresh (real dovecot)."""

from __future__ import annotations

from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.email.person import body_text
from tests.fakes.anthropic_api import Call, FakeAnthropic, text


def heard(call: Call) -> list[dict]:
    return [text(f"heard: {call.last_text}")]


async def test_new_in_an_email_thread_archives_it_and_starts_afresh(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = heard
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        first = ann.compose(world.bot, "Launch", "The launch is on the 9th.")
        await ann.send(first)
        (answer,) = await ann.wait_mail(1)
        await ann.send(ann.reply_quoting(answer, "new", world.bot))
        mails = await ann.wait_mail(2)
        notice = next(m for m in mails if "Started a new conversation" in body_text(m))
        await ann.send(ann.reply_quoting(notice, "When is the launch?", world.bot))
        await ann.wait_mail(3)
    assert len(fake.calls) == 2  # `new` took no model call
    assert "9th" not in fake.calls[-1].all_text
    assert list((tmp_path / "agents" / "coordinator" / "archive").glob("*.jsonl"))
