"""Email under failure: IMAP restarts, SMTP outages and refusals, no IDLE, TLS, lost UIDs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.core.messages import Outbound, Target
from bot.store.core import Store
from channels.email.imap import STATE_KEY
from channels.email.smtp import MAX_SESSIONS
from tests.email.conftest import MailWorld, channel_of, email_app
from tests.email.person import body_text
from tests.email.servers import Refusal, SmtpRelay, server_context
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import events, eventually


def _answer(fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text(f"answer to: {_said(call.last_text)}")]


def _said(last_text: str) -> str:
    """The first line a person wrote, without the "[Ann via email]: " label."""
    return last_text.split("]: ", 1)[-1].splitlines()[0]


def _connected(data_dir: Path) -> int:
    return len(events(data_dir, "channel.connected"))


async def test_imap_server_restart_during_idle_reconnects_and_handles_the_mail_once(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        await eventually(lambda: _connected(tmp_path) == 1)
        await ann.send(ann.compose(world.bot, "one", "first question"))
        await ann.wait_mail(1, match="first question")

        await asyncio.to_thread(world.dovecot.crash)  # the bot is in IDLE
        await eventually(lambda: bool(events(tmp_path, "channel.reconnecting")))
        await asyncio.to_thread(world.dovecot.start)
        await ann.send(ann.compose(world.bot, "two", "second question"))  # bot not back yet
        await ann.wait_mail(1, match="second question")
        await eventually(lambda: _connected(tmp_path) >= 2)
        await asyncio.sleep(0.5)  # room for a duplicate to show up
        mails = await ann.inbox()
    assert sorted(body_text(m).strip() for m in mails) == [
        "answer to: first question",
        "answer to: second question",
    ]
    assert len(fake.calls) == 2
    assert events(tmp_path, "channel.reconnecting")
    assert len(events(tmp_path, "message.received")) == 2


async def test_reply_waits_while_smtp_is_down_and_is_delivered_once_it_is_back(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    await world.relay.stop()
    async with email_app(world.settings(tmp_path, fake)):
        await ann.send(ann.compose(world.bot, "q", "are you there?"))
        await eventually(lambda: len(events(tmp_path, "outbox.retry")) >= 2)
        await world.relay.start()
        await ann.wait_mail(1, match="are you there?")
        await asyncio.sleep(0.3)
        mails = await ann.inbox()
    assert len(mails) == 1
    retry = events(tmp_path, "outbox.retry")[0]["data"]
    assert "unreachable" in retry["error"] and retry["target"] == f"email:{ann.address}"
    assert not events(tmp_path, "outbox.failed")


async def test_a_5xx_is_recorded_and_reported_to_the_email_home_target(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann, admin = world.ann, world.person("admin")
    world.handler.refuse[ann.address] = Refusal(550, "5.1.1 mailbox unavailable")
    conf = world.settings(tmp_path, fake, SWITCHBOARD_HOME=f"email:{admin.address}")
    async with email_app(conf):
        await ann.send(ann.compose(world.bot, "q", "hello?"))
        (notice,) = await admin.wait_mail(1)
    assert body_text(notice).startswith(
        f"Could not deliver a message from coordinator to email:{ann.address}: SMTP 550"
    )
    assert notice["Subject"] == "Message from Switchboard"
    (failed,) = events(tmp_path, "outbox.failed")
    assert "550" in failed["data"]["error"]
    assert await ann.inbox() == []


async def test_server_without_idle_is_polled(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    # dovecot advertises no IDLE to clients of 127.0.0.2 (a `local` block in its config)
    conf = world.settings(tmp_path, fake, IMAP_HOST="127.0.0.2", IMAP_POLL_SECONDS="0.2")
    async with email_app(conf) as app:
        await eventually(lambda: _connected(tmp_path) == 1)
        await ann.send(ann.compose(world.bot, "q", "polled?"))
        await ann.wait_mail(1, match="polled?")
        health = {c: (s, d) for c, s, d, _ in app.store.health()}
        assert channel_of(app).watcher.idles == 0
    assert health["email"][0] == "connected" and "polling every 0.2s" in health["email"][1]


async def test_idle_is_reissued_and_mail_still_arrives(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake, IMAP_IDLE_SECONDS="0.2")) as app:
        watcher = channel_of(app).watcher
        await eventually(lambda: watcher.idles >= 4)
        await ann.send(ann.compose(world.bot, "q", "still listening?"))
        await ann.wait_mail(1, match="still listening?")
    assert _connected(tmp_path) == 1  # renewed in the same session, no reconnect


@pytest.mark.parametrize("mode", ["ssl", "starttls"])
async def test_tls_modes_for_imap_and_smtp(
    tmp_path: Path,
    fake: FakeAnthropic,
    world: MailWorld,
    mode: str,
    tls_material: tuple[bytes, bytes, bytes],
) -> None:
    _answer(fake)
    ann, dovecot = world.ann, world.dovecot
    relay = await SmtpRelay(
        world.handler, tls=mode, context=server_context(*tls_material[1:])
    ).start()
    conf = world.settings(
        tmp_path,
        fake,
        IMAP_TLS=mode,
        IMAP_PORT=str(dovecot.imaps if mode == "ssl" else dovecot.imap),
        SMTP_TLS=mode,
        SMTP_PORT=str(relay.port),
        EMAIL_TLS_CA_FILE=str(dovecot.ca_file),
    )
    try:
        async with email_app(conf):
            await ann.send(ann.compose(world.bot, "q", f"over {mode}?"))
            await ann.wait_mail(1, match=f"over {mode}?")
    finally:
        await relay.stop()
    assert "TLS" in dovecot.log()[-20_000:] or mode == "ssl"


async def test_an_untrusted_certificate_is_refused(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    conf = world.settings(tmp_path, fake, IMAP_TLS="ssl", IMAP_PORT=str(world.dovecot.imaps))
    async with email_app(conf):
        await eventually(lambda: bool(events(tmp_path, "channel.reconnecting")))
    error = events(tmp_path, "channel.reconnecting")[0]["data"]["error"]
    assert "CERTIFICATE_VERIFY_FAILED" in error
    assert _connected(tmp_path) == 0


async def test_new_uidvalidity_handles_unread_mail_and_follows_uids_from_there(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    me = world.person("bot")  # the bot's own mailbox, as a mail client sees it
    conf = world.settings(tmp_path, fake)
    await ann.send(ann.compose(world.bot, "old", "handled long ago"))
    await ann.send(ann.compose(world.bot, "new", "never read"))
    await me.set_flag(1, r"\Seen")
    store = Store(conf.db_path)
    store.set_kv(STATE_KEY, json.dumps({"uidvalidity": 1, "last_uid": 10**6}))  # a stale mailbox
    store.close()
    async with email_app(conf):
        await ann.wait_mail(1, match="never read")
        await ann.send(ann.compose(world.bot, "later", "arrived later"))
        await ann.wait_mail(1, match="arrived later")
    assert [_said(c.last_text) for c in fake.calls] == ["never read", "arrived later"]
    (change,) = events(tmp_path, "channel.uidvalidity")
    assert change["data"]["old"] == 1
    assert all(r"\Seen" in line for line in (await me.flags()).values())


async def test_mail_journaled_but_not_marked_seen_is_not_handled_twice(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann, me = world.ann, world.person("bot")
    conf = world.settings(tmp_path, fake)
    async with email_app(conf):
        await ann.send(ann.compose(world.bot, "q", "only once"))
        await ann.wait_mail(1, match="only once")
    assert r"\Seen" in (await me.flags())[1]
    # a crash after the journal but before \Seen and the UID were stored
    await me.set_flag(1, r"\Seen", on=False)
    store = Store(conf.db_path)
    state = json.loads(store.get_kv(STATE_KEY) or "{}")
    store.set_kv(STATE_KEY, json.dumps({**state, "last_uid": 0}))
    store.close()
    async with email_app(conf):
        await eventually(lambda: bool(events(tmp_path, "message.duplicate")))
        await eventually(lambda: r"\Seen" in me._flags()[1])
    assert len(fake.calls) == 1
    assert len(await ann.inbox()) == 1


async def test_a_4xx_is_retried_until_the_server_takes_the_mail(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    ann = world.ann
    world.handler.refuse[ann.address] = Refusal(451, "4.2.0 try again later")
    async with email_app(world.settings(tmp_path, fake)):
        await ann.send(ann.compose(world.bot, "q", "greylisted?"))
        await eventually(lambda: len(events(tmp_path, "outbox.retry")) >= 2)
        del world.handler.refuse[ann.address]
        await ann.wait_mail(1, match="greylisted?")
    assert "451" in events(tmp_path, "outbox.retry")[0]["data"]["error"]
    assert not events(tmp_path, "outbox.failed")


async def test_a_burst_to_many_addresses_keeps_few_smtp_sessions_open(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    # The outbox delivers to every address at once; hundreds of SMTP sessions would
    # overflow a server's backlog and wait out connect timeouts (seen: 9 mails/s).
    world.handler.deliver, world.handler.hold = False, 0.2
    async with email_app(world.settings(tmp_path, fake)) as app:
        for i in range(40):
            target = Target("email", f"reader{i}@localhost")
            app.human.say(Outbound("coordinator", target, f"update {i}"))
        await eventually(lambda: len(world.handler.accepted) == 40)
    assert 1 < world.handler.most_sessions <= MAX_SESSIONS
    assert not events(tmp_path, "outbox.retry")


async def test_a_session_that_fails_before_catching_up_backs_off_more_each_time(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    # login works, SELECT fails: before, every retry came 0.25-0.5 s after the last
    # (the backoff started over at each login), a loop of ~2.6 reconnects a second
    settings = world.settings(tmp_path, fake, IMAP_MAILBOX="NoSuchFolder")
    async with email_app(settings):
        await eventually(lambda: len(events(tmp_path, "channel.reconnecting")) >= 3, timeout=10)
    delays = [e["data"]["delay"] for e in events(tmp_path, "channel.reconnecting")]
    assert delays[0] <= 0.5 and 0.5 <= delays[1] <= 1.0 and delays[2] >= 1.0
