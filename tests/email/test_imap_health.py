"""Email health from the IMAP connection itself, as `/healthz` shows it: a server that
freezes with the socket open (SIGSTOP), or crashes and refuses reconnects, turns it
503 within 15 s, in IDLE and in polling mode; it is 200 again once the server is back,
and mail flows. A quiet, healthy session stays connected through its checks.

The frozen and quiet tests run the watcher's waits (CHECK_SECONDS, ANSWER_SECONDS,
STALE_SECONDS) cut to SCALE and hold the 15 s promise at that scale, 15 * SCALE s: the
same logic, less waiting. test_the_real_waits_keep_the_15s_promise checks that the real
waits add up to 15 s with the same room."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from channels.email import imap, imap_client
from tests.email.conftest import MailWorld, channel_of, email_app
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import events, eventually
from tests.kits.ops_kit import HEALTHZ_POLL, free_port, get, healthz_until, scale_waits

MODES = pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.2"], ids=["idle", "polling"]
)  # dovecot offers no IDLE to 127.0.0.2


#: the watcher's waits in the timed tests, as a share of the real ones
SCALE = 0.4
WAITS = ((imap, "CHECK_SECONDS"), (imap_client, "ANSWER_SECONDS"), (imap_client, "STALE_SECONDS"))


@pytest.fixture
def quick_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's waits cut to SCALE: the 15 s promise becomes 15 * SCALE s."""
    scale_waits(monkeypatch, SCALE, WAITS)


def test_the_real_waits_keep_the_15s_promise() -> None:
    """A frozen server is found out at the latest when the wait it froze in ends
    (CHECK_SECONDS) and the answer it owes then is overdue (ANSWER_SECONDS): that, and
    /healthz's own poll, stay under 15 s with 2 s to spare, and so does a server silent
    for STALE_SECONDS in a longer command (a FETCH may take TIMEOUT_SECONDS); a healthy
    IDLE of CHECK_SECONDS, silent by design, is not taken for a server gone silent."""
    assert imap.CHECK_SECONDS + imap_client.ANSWER_SECONDS + HEALTHZ_POLL <= 15 - 2
    assert imap_client.STALE_SECONDS + HEALTHZ_POLL <= 15 - 2
    assert imap_client.STALE_SECONDS >= imap.CHECK_SECONDS + 2


def _answer(fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text("answered")]


async def _email_health(url: str) -> str:
    _, body, _ = await get(url + "/healthz")
    return str(json.loads(body)["channels"]["email"])


async def _mail_flows(world: MailWorld, subject: str) -> None:
    await world.ann.send(world.ann.compose(world.bot, subject, f"{subject}?"))
    await world.ann.wait_mail(1, match="answered", timeout=20)


@MODES
async def test_a_frozen_imap_server_turns_healthz_503_within_15s_and_back(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, host: str, quick_waits: None
) -> None:
    _answer(fake)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = world.settings(tmp_path, fake, IMAP_HOST=host, SWITCHBOARD_HTTP_PORT=str(port))
    async with email_app(settings):
        await healthz_until(url, 200, 10)
        world.dovecot.freeze()  # the socket stays open; nothing answers
        try:
            took = await healthz_until(url, 503, 20)
            assert await _email_health(url) == "reconnecting"
        finally:
            world.dovecot.thaw()
        assert took <= 15 * SCALE, took
        await healthz_until(url, 200, 60)
        await _mail_flows(world, "thawed")


async def test_a_crashed_imap_server_refusing_reconnects_is_503_until_it_is_back(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    _answer(fake)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = world.settings(tmp_path, fake, SWITCHBOARD_HTTP_PORT=str(port))
    async with email_app(settings):
        await healthz_until(url, 200, 10)
        await asyncio.to_thread(world.dovecot.crash)
        try:
            assert await healthz_until(url, 503, 20) <= 15
            await eventually(lambda: len(events(tmp_path, "channel.reconnecting")) >= 3)
            assert await _email_health(url) == "reconnecting"  # refused, again and again
        finally:
            await asyncio.to_thread(world.dovecot.start)
        await healthz_until(url, 200, 60)
        await _mail_flows(world, "restarted")


async def test_a_quiet_healthy_session_stays_connected_through_its_checks(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, quick_waits: None
) -> None:
    _answer(fake)
    async with email_app(world.settings(tmp_path, fake)) as app:
        watcher = channel_of(app).watcher
        await eventually(lambda: watcher.idles >= 3, timeout=30)  # two IDLEs ended, unasked
        assert await channel_of(app).probe() == watcher.state
        assert watcher.state[0] == "connected"
        await _mail_flows(world, "quiet")
    assert len(events(tmp_path, "channel.connected")) == 1  # one session throughout
    assert not events(tmp_path, "channel.reconnecting")
    assert {e["data"]["state"] for e in events(tmp_path, "channel.health")} <= {"connected"}
