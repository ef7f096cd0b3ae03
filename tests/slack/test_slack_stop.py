"""Stopping Socket Mode with an envelope being journaled: its ack goes out before the
socket closes, and an envelope arriving meanwhile is left for Slack to send again.

The real bolt app and slack-sdk Socket Mode client against the fake Slack; the
journal is a list whose write waits until the test lets it go."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.connection import SocketModeConnection, build_app
from channels.slack.identity import BotIdentity
from tests.fakes.slack_api import BOT_ID, BOT_USER, FakeSlack

ME = BotIdentity(BOT_USER, BOT_ID, "switchboard", "T1", can_customize=False)


def dm(text: str, ts: str) -> dict[str, Any]:
    return {"type": "message", "channel": "D1", "user": "UANN", "text": text, "ts": ts,
            "channel_type": "im"}  # fmt: skip


async def test_stop_lets_the_ack_in_flight_go_out_and_takes_no_new_envelope(
    slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    journaled: list[str] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow_journal(body: dict[str, Any]) -> None:  # the work before the ack, held
        entered.set()
        await release.wait()

    client = AsyncWebClient(token="xoxb-fake", base_url=slack.api_url)
    app = build_app(
        client,
        lambda body: journaled.append(body["event"]["text"]),
        None,
        lambda: ME,
        prepare=slow_journal,
    )
    connection = SocketModeConnection(app, "xapp-fake", lambda *_: None, lambda: None)
    arrived: list[str] = []  # envelope ids the client took off its socket

    async def took(_client: Any, message: dict[str, Any], _raw: str | None) -> None:
        arrived.append(str(message.get("envelope_id")))

    connection.handler.client.message_listeners.append(took)
    await connection.start()
    await slack.until(lambda s: s.open_sockets == 1)
    first = slack.send_event(dm("first", "1.1"))
    await asyncio.wait_for(entered.wait(), 10)

    caplog.set_level(logging.DEBUG)
    stopping = asyncio.create_task(connection.stop())
    await asyncio.sleep(0.1)
    second = slack.send_event(dm("second", "1.2"))
    for _ in range(100):  # the second reaches the client while the first is held
        if second.id in arrived:
            break
        await asyncio.sleep(0.05)
    assert second.id in arrived
    assert not stopping.done()  # waiting for the first one's ack
    release.set()
    await asyncio.wait_for(stopping, 10)
    if client.session is not None:
        await client.session.close()

    assert journaled == ["first"]
    assert slack.envelopes[first.id].acked_at is not None
    assert slack.envelopes[second.id].acked_at is None  # Slack sends it again
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
