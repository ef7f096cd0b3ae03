"""One bad mail never stops the channel: a poisoned attachment name, a disk that refuses
a file, a mail whose handling fails, a 200 KB page of nested lists. Each is answered
or set aside once; the watcher never reconnects over it, the sender is never locked
out by its re-reads, and the event loop keeps serving meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.core.html_text import HtmlLimits, html_to_text, to_text
from channels.email.safety import RateGuard
from tests.email.conftest import MailWorld, channel_of, email_app
from tests.email.person import Person
from tests.email.servers import stamp
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import events, eventually
from tests.kits.loop_kit import turns

POISON = "ä" * 200 + ".csv"  # 404 bytes of UTF-8: over every file system's 255


def nested_lists(size: int = 200_000) -> str:
    depth = size // 19
    return "<html><body>" + "<ul><li>x" * depth + "</li></ul>" * depth + "</body></html>"


async def test_a_poisoned_attachment_name_is_saved_short_and_answered_once(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        mail = ann.compose(world.bot, "numbers", "see attached")
        mail.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename=POISON)
        await ann.send(mail)
        await ann.wait_mail(1, match="answered")
    (saved,) = (tmp_path / "files").rglob("*.csv")
    assert len(saved.name.encode()) <= 255 and saved.name.startswith("ää")
    assert events(tmp_path, "channel.reconnecting") == []
    assert len(fake.calls) == 1


async def test_a_file_the_disk_refuses_leaves_the_mail_answered(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    (tmp_path / "files").write_text("a file where the files directory should be")
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        mail = ann.compose(world.bot, "numbers", "see attached")
        mail.add_attachment(b"1,2\n", maintype="text", subtype="csv", filename="n.csv")
        await ann.send(mail)
        await ann.wait_mail(1, match="answered")
    assert "not saved: the disk refused it" in fake.calls[0].last_text
    assert events(tmp_path, "channel.reconnecting") == []


async def test_a_mail_that_fails_is_set_aside_once_and_the_sender_is_not_locked_out(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    ann = world.ann
    settings = world.settings(tmp_path, fake, EMAIL_MAX_PER_SENDER_PER_HOUR="3")
    async with email_app(settings) as app:
        watcher = channel_of(app).watcher
        handle = watcher.handle
        tries: list[bytes] = []

        async def failing_on_poison(raw: bytes, size: int) -> None:
            if b"poison" in raw:  # a bug this one mail triggers, wherever it is
                tries.append(raw)
                raise RuntimeError("cannot process this one")
            await handle(raw, size)

        watcher.handle = failing_on_poison
        await eventually(lambda: watcher.idles >= 1)
        await ann.send(ann.compose(world.bot, "poison", "poison"))
        await eventually(lambda: len(events(tmp_path, "message.quarantined")) == 1)
        for n in range(3):  # the limit is 3 an hour: the poisoned mail never counted
            await ann.send(ann.compose(world.bot, f"q{n}", f"question {n}"))
        await ann.wait_mail(3, match="answered", timeout=30)
    assert len(tries) == 1
    assert events(tmp_path, "channel.reconnecting") == []
    mailbox = Person(world.bot, world.dovecot, world.relay.port)
    assert all("\\Seen" in line for line in (await mailbox.flags()).values())  # set aside


def test_rereading_one_mail_never_counts_toward_the_loop_limit() -> None:
    guard = RateGuard(2, window=3600)
    assert all(guard.admit("ann@x.org", "<same@x>", now=i) for i in range(60))
    assert guard.admit("ann@x.org", "<a@x>", now=61)
    assert not guard.admit("ann@x.org", "<b@x>", now=62)


async def test_a_nested_list_mail_leaves_the_loop_serving(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)) as app:
        channel = channel_of(app)
        mail = ann.compose(world.bot, "page", "see below")
        mail.add_alternative(nested_lists(), subtype="html")
        raw = stamp(bytes(mail).replace(b"see below", b""), ann.address)  # HTML says it all
        async with turns() as during:
            await channel.handle(raw, len(raw))
        await ann.wait_mail(1, match="answered", timeout=30)
    assert during.count > 10  # the loop kept turning while the mail was parsed and converted
    assert "x" in fake.calls[0].last_text


def test_html_conversion_is_bounded_in_size_nesting_and_time() -> None:
    page = nested_lists()
    out = html_to_text(page)
    assert len(out) < 100_000 and out.count("x") >= 10_000  # the text stays, not the nesting
    cut = html_to_text("<p>" + "word " * 100_000 + "</p>", HtmlLimits(max_chars=1000))
    assert len(cut) < 2000 and "not converted" in cut
    slow = html_to_text("<p>a</p>" * 200_000, HtmlLimits(seconds=0.0))
    assert "not converted" in slow
    assert asyncio.run(to_text("<b>bold</b>")).strip() == "**bold**"


async def test_a_verified_mail_that_fails_is_answered_once_and_set_aside(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)) as app:
        channel = channel_of(app)

        def broken(*args: object) -> list[object]:  # a bug past every check
            raise RuntimeError("a bug in the intake")

        channel._save_files = broken  # type: ignore[method-assign]
        await ann.send(ann.compose(world.bot, "poisoned", "anything"))
        (notice,) = await ann.wait_mail(1, match="could not be processed")
        await eventually(lambda: len(events(tmp_path, "message.refused")) == 1)
    assert notice["Subject"] == "Re: poisoned"
    (refused,) = events(tmp_path, "message.refused")
    assert refused["data"]["reason"].startswith("could not be processed: RuntimeError")
    assert fake.calls == [] and events(tmp_path, "channel.reconnecting") == []
