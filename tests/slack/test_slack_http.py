"""The Slack channel in HTTP Events mode (bolt's signature verification on an aiohttp
endpoint), and `switchboard run` serving Slack as a real subprocess."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bot.store.core import Store
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack, deliver_http
from tests.kits.app_kit import events
from tests.kits.proc import Switchboard
from tests.kits.slack_kit import (
    MENTION,
    heard,
    http_settings,
    slack_app,
)


@contextlib.asynccontextmanager
async def http_endpoint(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> AsyncIterator[tuple[str, str]]:
    """The app in HTTP Events mode: yields its events URL and the signing secret."""
    async with slack_app(http_settings(tmp_path, fake, slack)):
        yield slack.http_endpoint or "", slack.signing_secret


def mention_body(slack: FakeSlack, words: str = "hello") -> dict:
    ts = slack.next_ts()
    event = {"type": "app_mention", "channel": "C1", "user": "UANN", "ts": ts}
    return slack.callback({**event, "text": f"{MENTION} {words}", "event_ts": ts})


async def test_forged_or_stale_requests_get_401_and_reach_no_model(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with http_endpoint(tmp_path, fake, slack) as (url, secret):
        forged = await deliver_http(url, mention_body(slack), secret, signature="v0=" + "0" * 64)
        wrong_key = await deliver_http(url, mention_body(slack), "not-the-secret")
        stale = await deliver_http(
            url, mention_body(slack), secret, timestamp=int(time.time()) - 600
        )
        garbage = await deliver_http(url, "{not json", secret)
    assert [forged[0], wrong_key[0], stale[0]] == [401, 401, 401]
    assert garbage[0] == 400
    refused = [e["data"]["reason"] for e in events(tmp_path, "message.refused")]
    assert refused == ["malformed request"]
    assert fake.calls == [] and slack.posts == []
    assert events(tmp_path, "message.received") == []


async def test_an_event_delivered_twice_is_answered_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with http_endpoint(tmp_path, fake, slack) as (url, secret):
        body = mention_body(slack)
        first = await deliver_http(url, body, secret)
        retry = await deliver_http(url, body, secret, retry_num=1)  # Slack's redelivery
        await slack.until(lambda s: len(s.posts) == 1)
        challenge = {"type": "url_verification", "challenge": "c-123", "token": "t"}
        verified = await deliver_http(url, challenge, secret)
        await slack.until(lambda s: len(s.http_statuses) == 1)  # our reply's echo
    assert first[0] == retry[0] == 200
    assert json.loads(verified[1]) == {"challenge": "c-123"}
    reply = slack.posts[0]
    assert reply["thread_ts"] == body["event"]["ts"] and reply["text"].endswith("hello")
    assert len(fake.calls) == 1 and slack.http_statuses == [200]


async def test_http_mode_follow_up_through_the_fake(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(http_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} first", channel="C7")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post("second", channel="C7", thread_ts=ts)
        await slack.until(lambda s: len(s.posts) == 2)
    assert [p["thread_ts"] for p in slack.posts] == [ts, ts]


def test_switchboard_run_serves_slack_and_reports_health(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    data = tmp_path / "data"
    env = {**fake.env(), **slack.env("socket"), "SLACK_PACE_SECONDS": "0.02"}
    run = Switchboard(["--data-dir", str(data), "run"], env, tmp_path)
    try:
        slack.wait_for(lambda s: s.open_sockets == 1, timeout=20)
        ts = slack.post(f"{MENTION} are you there?", channel="C1")
        slack.wait_for(lambda s: len(s.messages) == 1)
        status = Switchboard(["--data-dir", str(data), "status"], env, tmp_path)
        code, lines = status.finish()
        assert code == 0
        assert any(re.match(r"slack\s+connected\s+Socket Mode", line) for line in lines), lines
    finally:
        run.proc.send_signal(signal.SIGTERM)
        code, _ = run.finish()
    assert code == 0
    assert slack.messages[0]["thread_ts"] == ts
    store = Store(data / "switchboard.db", readonly=True)
    try:
        assert [h[:2] for h in store.health()] == [("slack", "stopped")]
    finally:
        store.close()
