"""Approvals on Discord, through discord.py and the fake Discord: Approve / Deny buttons
(message components, INTERACTION_CREATE answered at once), a non-approver's click."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.kits.discord_kit import MENTION, discord_app, post_with, posted
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings

RESTART = 'call ops__restart_service {"service": "api"}'
BOB = f"discord:{dp.BOB}"


def settings_for(tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord, **env: str) -> Any:
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*"])
    return tools_settings(tmp_path, fake, [entry], **discord_fake.env(), **env)


async def request(app: Any, discord_fake: FakeDiscord) -> str:
    await app.mcp.wait_connected(30)
    discord_fake.say(f"{MENTION} {RESTART}")
    await discord_fake.until(posted("Approval needed"), 30)
    mid = post_with(discord_fake, "Approval needed").id
    buttons = discord_fake.messages[mid]["components"][0]["components"]
    assert [b["label"] for b in buttons] == ["Approve", "Deny"]
    return mid


async def test_approve_button_updates_the_message_and_runs_once(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = caller
    async with discord_app(settings_for(tmp_path, fake, discord_fake)) as app:
        mid = await request(app, discord_fake)
        approval = discord_fake.messages[mid]["components"][0]["components"][0]["custom_id"]
        first = discord_fake.click(mid, approval, user=dp.BOB)
        await discord_fake.until(posted("result: api restarted"), 30)
        again = discord_fake.click(mid, approval, user=dp.BOB)
        await discord_fake.until(lambda _: bool(discord_fake.responses(again)))
        [update] = discord_fake.responses(first)
        assert update["type"] == 7 and f"Approved by {BOB} at " in update["data"]["content"]
        assert discord_fake.messages[mid]["components"] == []  # the buttons are gone
        [note] = discord_fake.responses(again)
        assert note["type"] == 4 and note["data"]["flags"] == 64
        assert "already decided" in note["data"]["content"]
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1


async def test_a_non_approver_gets_an_ephemeral_note_and_deny_says_who(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = caller
    settings = settings_for(tmp_path, fake, discord_fake, SWITCHBOARD_APPROVERS=str(dp.BOB))
    async with discord_app(settings) as app:
        mid = await request(app, discord_fake)
        buttons = discord_fake.messages[mid]["components"][0]["components"]
        refused = discord_fake.click(mid, buttons[0]["custom_id"], user=dp.ANN)
        await discord_fake.until(lambda _: bool(discord_fake.responses(refused)))
        [note] = discord_fake.responses(refused)
        assert note["data"]["flags"] == 64 and "Only approvers" in note["data"]["content"]
        assert discord_fake.messages[mid]["components"]  # unchanged
        denied = discord_fake.click(mid, buttons[1]["custom_id"], user=dp.BOB)
        await discord_fake.until(posted(f"result ERROR: Error: denied by {BOB}"), 30)
        assert f"Denied by {BOB}" in discord_fake.responses(denied)[0]["data"]["content"]
    assert calls(tmp_path / "calls.jsonl", "restart_service") == []


async def test_a_reply_in_the_thread_decides_and_the_request_shows_it(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = caller
    async with discord_app(settings_for(tmp_path, fake, discord_fake)) as app:
        mid = await request(app, discord_fake)
        channel = str(discord_fake.messages[mid]["channel_id"])
        discord_fake.say("approve", channel=channel)  # Ann asked: not hers to decide
        await discord_fake.until(posted("You asked for this call"), 30)
        discord_fake.say("approve", channel=channel, author=dp.BOB)
        await discord_fake.until(posted("result: api restarted"), 30)
        await discord_fake.until(lambda _: mid in discord_fake.edits)
        assert f"Approved by {BOB} at " in discord_fake.messages[mid]["content"]
        assert discord_fake.messages[mid]["components"] == []
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1


async def test_clicks_honour_allowed_channels_and_a_replayed_button_is_refused(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    """A click in a channel outside DISCORD_ALLOWED_CHANNELS is refused; so is the same
    button's payload replayed from another (allowed) channel than the request's."""
    fake.responder = caller
    allowed = f"{dp.GENERAL},{dp.RANDOM}"
    settings = settings_for(tmp_path, fake, discord_fake, DISCORD_ALLOWED_CHANNELS=allowed)
    async with discord_app(settings) as app:
        mid = await request(app, discord_fake)
        approve = discord_fake.messages[mid]["components"][0]["components"][0]["custom_id"]
        home = discord_fake.messages[mid]["channel_id"]
        discord_fake.messages[mid]["channel_id"] = str(dp.RANDOM)  # replayed from #random
        replayed = discord_fake.click(mid, approve, user=dp.BOB)
        await discord_fake.until(lambda _: bool(discord_fake.responses(replayed)))
        assert "another conversation" in discord_fake.responses(replayed)[0]["data"]["content"]
        settings.discord_allowed_channels[:] = [str(dp.RANDOM)]  # #general no longer allowed
        discord_fake.messages[mid]["channel_id"] = home
        outside = discord_fake.click(mid, approve, user=dp.BOB)
        await discord_fake.until(lambda _: bool(discord_fake.responses(outside)))
        assert "in its channels" in discord_fake.responses(outside)[0]["data"]["content"]
        assert app.store.approvals.pending()
    assert calls(tmp_path / "calls.jsonl", "restart_service") == []
