"""`/healthz` tells the truth: a Slack socket that dies without a close frame, with
reconnects refused, turns it 503 within 15 s (the state comes from the Socket Mode
client's own connection check), and it is 200 again once the socket is back; a cut
Discord gateway likewise. (Email: tests/email/test_imap_health.py.)

The Slack test runs the connection's waits (PING_INTERVAL, STALE_SECONDS) cut to SCALE
and holds the 15 s promise at that scale, 15 * SCALE s: the same logic, less waiting;
test_the_real_slack_waits_keep_the_15s_promise checks the real waits add up to 15 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.ledger.report import full_status
from channels.slack import connection
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.kits.discord_kit import discord_app, discord_settings
from tests.kits.ops_kit import HEALTHZ_POLL, free_port, get, healthz_until, scale_waits
from tests.kits.slack_kit import heard, slack_app, slack_settings

#: the Slack connection's waits in the timed test, as a share of the real ones
SCALE = 0.4


def test_the_real_slack_waits_keep_the_15s_promise() -> None:
    """A socket whose pings go unanswered is reported lost once its last answered ping
    is STALE_SECONDS old: that, and /healthz's own poll, stay under 15 s with 2 s to
    spare; a healthy socket, pinged every PING_INTERVAL, gets two pings in first."""
    assert connection.STALE_SECONDS + HEALTHZ_POLL <= 15 - 2
    assert connection.STALE_SECONDS > 2 * connection.PING_INTERVAL


async def test_a_silently_dead_slack_socket_turns_healthz_503_within_15s(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    scale_waits(monkeypatch, SCALE, ((connection, "PING_INTERVAL"), (connection, "STALE_SECONDS")))
    fake.responder = heard
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_HTTP_PORT=str(port))
    async with slack_app(settings) as (app, _channel):
        await healthz_until(url, 200, 10)
        slack.silence()  # no close frame, pings unanswered, reconnects refused
        took = await healthz_until(url, 503, 20)
        assert took <= 15 * SCALE, took
        _, text, _ = await get(url + "/healthz")
        assert json.loads(text)["channels"] == {"slack": "reconnecting"}
        assert "slack" in full_status(app.store) and "reconnecting" in full_status(app.store)
        slack.revive()
        await healthz_until(url, 200, 60)
        slack.post("are you back?", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 1)


async def test_a_lost_discord_gateway_turns_healthz_503_and_back(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_HTTP_PORT=str(port))
    async with discord_app(settings):
        await healthz_until(url, 200, 10)
        discord_fake.drop(hold=True)  # the socket is cut; the RESUME waits
        took = await healthz_until(url, 503, 20)
        assert took <= 15, took
        discord_fake.release()
        await healthz_until(url, 200, 30)
