"""The HTTP API end to end: `POST /api/messages` journals and routes a program's
message, `GET /api/messages/<id>` returns its replies; callers named by the token."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from config.settings import SettingsError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, eventually, make_settings
from tests.kits.ops_kit import served_app

CI = "ci:" + "c" * 24
ALERTS = "alerts:" + "a" * 24
TOKENS = {"SWITCHBOARD_API_TOKEN": f"{CI},{ALERTS}"}


def bearer(pair: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {pair.partition(':')[2]}"}


async def call(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else None
    payload = None if data is not None or body is None else body
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, json=payload, data=data, headers=headers) as response,
    ):
        return response.status, await response.json()


async def replies(url: str, message_id: str, pair: str = CI) -> list[dict[str, Any]]:
    status, body = await call("GET", f"{url}/api/messages/{message_id}", headers=bearer(pair))
    assert status == 200, body
    return list(body["replies"])


async def replies_when(url: str, message_id: str, n: int) -> list[dict[str, Any]]:
    """Poll (bounded) until the message has `n` replies."""
    deadline = time.monotonic() + 10
    while len(found := await replies(url, message_id)) < n:
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.02)
    return found


async def test_a_posted_message_is_answered_and_its_replies_read_back(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **TOKENS) as (app, channel, url):
        status, body = await call(
            "POST", f"{url}/api/messages", {"text": "deploy 41 done"}, bearer(CI)
        )
        assert status == 202 and body["conversation"] == f"api:ci/{body['id']}"
        assert app.store.views.inbound_message("api", body["id"]) is not None  # journaled
        found = await replies_when(url, body["id"], 1)
        assert [r["from"] for r in found] == ["coordinator"]
        assert found[0]["text"].endswith(": deploy 41 done")
        assert channel.sent == []  # the API's own conversation is answered to the caller only
    call_text = json.dumps(fake.calls[0].body)
    assert "api:ci" in call_text  # the model sees which program wrote
    actions = events(tmp_path, "operator.action")
    assert actions[0]["data"]["decider"] == "api:ci" and actions[0]["data"]["how"] == "api"


async def test_an_idempotency_key_makes_a_retry_the_same_message_answered_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **TOKENS) as (_app, _channel, url):
        headers = {**bearer(CI), "Idempotency-Key": "deploy-41"}
        first = await call("POST", f"{url}/api/messages", {"text": "deploy 41"}, headers)
        await eventually(lambda: len(fake.calls) == 1)
        again = await call("POST", f"{url}/api/messages", {"text": "deploy 41"}, headers)
        assert first[0] == again[0] == 202 and first[1]["id"] == again[1]["id"]
        other = await call("POST", f"{url}/api/messages", {"text": "x"}, {**bearer(ALERTS),
                           "Idempotency-Key": "deploy-41"})  # fmt: skip
        assert other[1]["id"] != first[1]["id"]  # keys are per caller
        await eventually(lambda: len(fake.calls) == 2)
    assert sum("deploy 41" in json.dumps(c.body) for c in fake.calls) == 1


async def test_a_message_into_a_delivery_target_is_answered_there(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    # a place of a person's is the caller's only when listed for it (issue 28: an API
    # caller posting into any conversation was review #7)
    listed = {**TOKENS, "SWITCHBOARD_API_TARGETS": "ci:terminal"}
    async with served_app(tmp_path, fake, **listed) as (_app, channel, url):
        status, body = await call(
            "POST",
            f"{url}/api/messages",
            {"text": "v2.3 is live", "conversation": "terminal", "sender": "deploy-bot"},
            bearer(CI),
        )
        assert status == 202 and body["conversation"] == "terminal"
        await channel.wait_text("v2.3 is live")
        got = await replies(url, body["id"])
    assert got[0]["text"].endswith("v2.3 is live") and got[0]["status"] == "sent"
    assert "deploy-bot (api:ci)" in json.dumps(fake.calls[0].body)


async def test_a_named_conversation_keeps_its_transcript_across_messages(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **TOKENS) as (_app, _channel, url):
        for text in ("first", "second"):
            status, body = await call(
                "POST", f"{url}/api/messages", {"text": text, "conversation": "deploys"},
                bearer(CI),
            )  # fmt: skip
            assert status == 202 and body["conversation"] == "api:ci/deploys"
            await eventually(lambda t=text: any(t in json.dumps(c.body) for c in fake.calls))
        await eventually(lambda: len(fake.calls) == 2)
    assert "first" in json.dumps(fake.calls[1].body)  # the second turn saw the first


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({}, 400, '"text" is required'),
        ({"text": "   "}, 400, '"text" is required'),
        ({"text": 5}, 400, '"text" is required'),
        (b"not json", 400, "not JSON"),
        (b"[1]", 400, "JSON object"),
        ({"text": "x" * 1_000_000}, 413, "too long"),
        ({"text": "x" * 40_001}, 413, "too long"),
        ({"text": "hi", "conversation": "slack:C1"}, 400, "no slack channel"),
        ({"text": "hi", "conversation": "nope:x"}, 400, "unknown delivery target"),
        ({"text": "hi", "conversation": "api:alerts/x"}, 400, "not yours"),
        ({"text": "hi", "conversation": "a b"}, 400, "names may hold"),
        ({"text": "hi", "sender": ""}, 400, '"sender"'),
    ],
)
async def test_bad_messages_get_a_clear_answer_and_change_nothing(
    tmp_path: Path, fake: FakeAnthropic, body: Any, status: int, words: str
) -> None:
    async with served_app(tmp_path, fake, **TOKENS) as (app, _channel, url):
        got = await call("POST", f"{url}/api/messages", body, bearer(CI))
        assert got[0] == status and words in got[1]["error"], got
        assert app.store.inbound_between(0, 1e12) == []
    assert fake.calls == []


async def test_callers_need_their_token_and_see_only_their_messages(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **TOKENS) as (_app, _channel, url):
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
            status, body = await call("POST", f"{url}/api/messages", {"text": "x"}, headers)
            assert status == 401 and "SWITCHBOARD_API_TOKEN" in body["error"]
        _, posted = await call("POST", f"{url}/api/messages", {"text": "x"}, bearer(CI))
        status, body = await call(
            "GET", f"{url}/api/messages/{posted['id']}", headers=bearer(ALERTS)
        )
        assert status == 404
        status, _ = await call("GET", f"{url}/api/messages/nope", headers=bearer(CI))
        assert status == 404


async def test_without_a_token_the_api_is_off(tmp_path: Path, fake: FakeAnthropic) -> None:
    async with served_app(tmp_path, fake) as (_app, _channel, url):
        async with aiohttp.ClientSession() as session:
            response = await session.post(f"{url}/api/messages", json={"text": "x"})
            assert response.status in (404, 405)


@pytest.mark.parametrize(
    ("value", "words"),
    [("ci:short", "at least 8"), ("bad name:" + "x" * 20, "caller name"), (",", "names no")],
)
def test_a_malformed_api_token_is_a_settings_error(
    tmp_path: Path, fake: FakeAnthropic, value: str, words: str
) -> None:
    with pytest.raises(SettingsError, match="SWITCHBOARD_API_TOKEN") as caught:
        make_settings(tmp_path, fake, SWITCHBOARD_API_TOKEN=value)
    assert words in str(caught.value)
