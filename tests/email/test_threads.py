"""Email end to end: a real dovecot (IMAP IDLE, LMTP), an aiosmtpd relay, the real app.

A person mails the bot and reads the answers in her own mailbox; workers ask by
email and resume with the answer alone.
"""

from __future__ import annotations

from pathlib import Path

from tests.email.conftest import MailWorld, channel_of, email_app
from tests.email.person import body_text, from_of
from tests.email.servers import stamp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.kits.app_kit import events, eventually
from tests.kits.script import TeamScript


async def test_new_mail_gets_a_threaded_answer_in_the_persons_mailbox(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text(f"**Answer {len(fake.calls)}**: the build is green.")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)) as app:
        first = ann.compose(world.bot, "Build status", "How is the build doing?")
        await ann.send(first)
        (answer,) = await ann.wait_mail(1)
        assert answer["Subject"] == "Re: Build status"
        assert from_of(answer) == ("Coordinator (Switchboard)", world.bot)
        assert answer["In-Reply-To"] == first["Message-ID"]
        assert answer["References"] == first["Message-ID"]
        assert answer["Message-ID"].endswith("@localhost>")
        assert answer["Auto-Submitted"] == "auto-replied"
        assert answer.get_content_type() == "multipart/alternative"
        assert body_text(answer).strip() == "**Answer 1**: the build is green."
        html = answer.get_body(preferencelist=("html",))
        assert html is not None and "<strong>Answer 1</strong>" in html.get_content()

        # she answers the answer: same conversation, the chain grows
        second = ann.reply_quoting(answer, "And the tests?", world.bot)
        await ann.send(second)
        mails = await ann.wait_mail(2)
        latest = next(m for m in mails if "Answer 2" in body_text(m))
        assert latest["Subject"] == "Re: Build status"
        assert latest["In-Reply-To"] == second["Message-ID"]
        assert latest["References"].split() == [
            first["Message-ID"],
            answer["Message-ID"],
            second["Message-ID"],
        ]
        assert len(app.coordinator.sessions) <= 1
    seen = fake.calls[0].last_text
    assert "How is the build doing?" in seen and "[Subject: Build status]" in seen
    assert fake.calls[1].last_text.endswith("And the tests?")  # quote stripped
    assert "Answer 1" in fake.calls[1].all_text  # one conversation for the thread
    received = events(tmp_path, "message.received")
    assert {e["data"]["conversation"] for e in received} == {f"email:{first['Message-ID']}"}


async def test_worker_question_by_email_is_answered_and_the_worker_resumes(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    ann = world.ann
    script = TeamScript(via=f"email:{ann.address}")
    fake.responder = script
    async with email_app(world.settings(tmp_path, fake)) as app:
        start = ann.compose(world.bot, "GPU research", "please research GPUs for us")
        await ann.send(start)
        (question,) = await ann.wait_mail(1, match="asks")
        assert question["Subject"] == "Alice asks: Data center or consumer GPUs?"
        assert from_of(question) == ("Alice (Switchboard)", world.bot)
        assert question["In-Reply-To"] is None
        (open_q,) = app.store.agents.open_questions()
        assert question["Message-ID"] in open_q.refs

        reply = ann.reply_quoting(question, "Data center only, please.", world.bot)
        await ann.send(reply)
        (report,) = await ann.wait_mail(1, match="Report based on")
        assert app.store.agents.open_questions() == []
    assert script.answers_seen == ["Data center only, please."]
    assert body_text(report).strip() == "Alice finished. Report based on: Data center only, please."
    assert from_of(report) == ("Coordinator (Switchboard)", world.bot)
    assert report["Subject"] == "Re: GPU research"
    assert report["References"].split()[0] == start["Message-ID"]
    worker_calls = [c for c in fake.calls if c.agent == "Alice"]
    assert "Data center or consumer GPUs?" not in worker_calls[-1].last_text  # quote stripped


def _only_coordinator(call: Call) -> list[dict[str, str]]:
    return [text("ok")]


async def test_a_long_mail_is_cut_and_the_answer_says_so(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("Read it.")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake, EMAIL_MAX_CHARS="300")):
        mail = ann.compose(world.bot, "Logs", "line of a long log\n" * 200)
        mail.add_attachment(
            b"%PDF-1.4" * 100, maintype="application", subtype="pdf", filename="build-log.pdf"
        )
        await ann.send(mail)
        (answer,) = await ann.wait_mail(1)
    seen = fake.calls[0].last_text
    assert "[This mail was cut: only its first 300 characters were read.]" in seen
    assert "[PDF build-log.pdf (800 B, application/pdf), saved as files/" in seen
    assert body_text(answer).strip() == (
        "Read it.\n\n(Note: your last mail was longer than I read; "
        "I read only its first 300 characters.)"
    )


async def test_mail_arriving_during_a_sync_is_not_left_for_the_next_idle(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    # dovecot announces mail that lands while the bot fetches and marks mail inside those
    # commands' responses (`* n EXISTS`), and never again in the next IDLE; aioimaplib
    # drops those lines. With IDLE renewed only every 10 minutes, such a mail would wait
    # that long. Here the second mail lands exactly then: while the first is handled.
    fake.responder = lambda call: [text("answered")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake, IMAP_IDLE_SECONDS="600")) as app:
        watcher = channel_of(app).watcher
        handle = watcher.handle

        async def handle_and_receive_another(raw: bytes, size: int) -> None:
            await handle(raw, size)
            if b"first" in raw:
                second = ann.compose(world.bot, "second", "the second question")
                world.dovecot.deliver(ann.address, [world.bot], stamp(bytes(second), ann.address))

        watcher.handle = handle_and_receive_another
        await eventually(lambda: watcher.idles == 1)  # caught up; the first mail wakes IDLE
        await ann.send(ann.compose(world.bot, "first", "the first question"))
        await ann.wait_mail(2, timeout=20, match="answered")  # not 600 s
