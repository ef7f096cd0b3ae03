"""Discord's `/switchboard catchup` application command against the fake Discord: the
command is registered when the session begins; each person's use is answered at once
with an ephemeral message (flag 64) holding their own conversations only; no model call."""

from __future__ import annotations

from pathlib import Path

from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.discord_kit import discord_app, discord_settings

CATCHUP = [{"name": "catchup", "type": 1}]


def heard(call: Call) -> list[dict]:
    return [text(f"heard: {call.last_text}")]


async def _answer(discord_fake: FakeDiscord, user: int, options: list[dict]) -> dict:
    token = discord_fake.command("switchboard", options, user=user)
    await discord_fake.until(lambda _: bool(discord_fake.responses(token)))
    (response,) = discord_fake.responses(token)
    assert response["type"] == 4 and response["data"]["flags"] == 64  # ephemeral
    return response["data"]


async def test_catchup_answers_each_person_privately_with_their_own_conversations(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        await discord_fake.until(lambda _: bool(discord_fake.app_commands))
        (command,) = discord_fake.app_commands
        assert command["name"] == "switchboard"
        assert [o["name"] for o in command["options"]] == ["catchup"]
        ann_dm, bob_dm = discord_fake.open_dm(dp.ANN), discord_fake.open_dm(dp.BOB)
        discord_fake.say("ann's secret plan", author=dp.ANN, channel=ann_dm)
        await discord_fake.until(lambda posts: len(posts) == 1)
        discord_fake.say("bob's private numbers", author=dp.BOB, channel=bob_dm)
        await discord_fake.until(lambda posts: len(posts) == 2)
        calls = len(fake.calls)
        ann = (await _answer(discord_fake, dp.ANN, CATCHUP))["content"]
        bob = (await _answer(discord_fake, dp.BOB, CATCHUP))["content"]
        helped = (await _answer(discord_fake, dp.ANN, []))["content"]
        assert len(fake.calls) == calls  # no model call
    assert ann.startswith("Since you last spoke to me (")
    assert f"coordinator said in <#{ann_dm}>: heard:" in ann and "secret plan" in ann
    assert "private numbers" not in ann and bob_dm not in ann
    assert f"coordinator said in <#{bob_dm}>: heard:" in bob and "secret plan" not in bob
    assert "/switchboard catchup" in helped


async def test_a_user_not_allowed_gets_no_catchup(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    settings = discord_settings(tmp_path, fake, discord_fake, DISCORD_ALLOWED_USERS=str(dp.BOB))
    async with discord_app(settings):
        await discord_fake.until(lambda _: bool(discord_fake.app_commands))
        answer = await _answer(discord_fake, dp.ANN, CATCHUP)
    assert answer["content"].startswith("Only people allowed")
