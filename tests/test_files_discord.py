"""Files people attach in Discord reach the model: the real discord.py against the fake
Discord (attachments in MESSAGE_CREATE, served from its CDN) and the fake Anthropic API."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.discord_kit import (  # noqa: F401
    MENTION,
    discord_app,
    discord_fake_fixture,
    discord_settings,
)
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.test_files_slack import png


def heard(call: Call) -> list[dict]:
    return [text(f"heard: {call.last_text[:200]}")]


async def test_discord_attachments_reach_the_model(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    settings = discord_settings(tmp_path, fake, discord_fake)
    image = png(3, 3)
    async with discord_app(settings):
        log = discord_fake.attachment("deploy.log", b"step 4/7 FAILED: disk full\n")
        shot = discord_fake.attachment("graph.png", image, "image/png")
        mid = discord_fake.say(f"{MENTION} look", attachments=[log, shot])
        await discord_fake.until(lambda posts: any(p.channel_id == mid for p in posts))
    body = fake.calls[0].all_text
    assert "step 4/7 FAILED: disk full" in body and "deploy.log" in body
    assert "http" not in fake.calls[0].last_text  # the CDN link is not what the model reads
    blocks = [b for m in fake.calls[0].messages for b in m["content"] if b["type"] == "image"]
    assert [base64.b64decode(b["source"]["data"]) for b in blocks] == [image]
    assert sorted(a for a, _ in discord_fake.downloads) == sorted([log["id"], shot["id"]])
    assert all(auth is None for _, auth in discord_fake.downloads)  # no token to the CDN


async def test_a_file_without_words_is_still_a_message(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_FILE_MAX_BYTES="2048")
    async with discord_app(settings):
        big = discord_fake.attachment("big.csv", b"a,b\n" * 1000, "text/csv")
        mid = discord_fake.say(MENTION, attachments=[big])
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(mid)) == 2)
    assert "without a message" in fake.calls[0].all_text
    assert "SWITCHBOARD_FILE_MAX_BYTES" in fake.calls[0].all_text
    assert discord_fake.downloads == []  # Discord said how big it is: not fetched
    assert any("big.csv" in p.content for p in discord_fake.in_channel(mid))
