"""The evaluation's local Slack (bot/evaluation/slack.py) answers the real slack_sdk as
Slack documents it: `auth.test` with the token's scopes, `chat.postMessage` with a ts
and the post echoed to the bot as a `message` event carrying its `bot_id`, a mention
delivered twice (`app_mention` and `message`), history newest first and replies
parent first."""

from __future__ import annotations

import asyncio
import json

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bot.evaluation.slack import BOT_ID, BOT_USER, LocalSlack


async def test_the_web_api_and_socket_mode_as_slack_sends_them() -> None:
    slack = LocalSlack({"UANN": "Ann"})
    await slack.start()
    try:
        client = AsyncWebClient(token="xoxb-eval", base_url=f"{slack.url}/api/")
        me = await client.auth_test()
        assert me["user_id"] == BOT_USER and "chat:write" in me.headers["x-oauth-scopes"]
        app = AsyncWebClient(token="xapp-eval", base_url=f"{slack.url}/api/")
        opened = await app.apps_connections_open(app_token="xapp-eval")
        async with aiohttp.ClientSession() as session, session.ws_connect(opened["url"]) as ws:
            assert json.loads((await ws.receive()).data)["type"] == "hello"
            root = await slack.post(f"<@{BOT_USER}> hi", "UANN", "C1")
            kinds = [json.loads((await ws.receive()).data) for _ in range(2)]
            assert [k["payload"]["event"]["type"] for k in kinds] == ["app_mention", "message"]
            answer = await client.chat_postMessage(channel="C1", text="hello", thread_ts=root)
            echo = json.loads((await asyncio.wait_for(ws.receive(), 5)).data)["payload"]["event"]
            assert echo["bot_id"] == BOT_ID and echo["ts"] == answer["ts"]
        await slack.post("later", "UANN", "C1")
        history = await client.conversations_history(channel="C1")
        assert [m["text"] for m in history["messages"]] == ["later", f"<@{BOT_USER}> hi"]
        replies = await client.conversations_replies(channel="C1", ts=root)
        assert [m["text"] for m in replies["messages"]] == [f"<@{BOT_USER}> hi", "hello"]
        assert (await client.users_info(user="UANN"))["user"]["profile"]["real_name"] == "Ann"
    finally:
        await slack.stop()
