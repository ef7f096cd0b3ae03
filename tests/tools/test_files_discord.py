"""Files people attach in Discord reach the model: the real discord.py against the fake
Discord (attachments in MESSAGE_CREATE, served from its CDN) and the fake Anthropic API."""

from __future__ import annotations

import base64
from pathlib import Path

from agents.tools.files import workspace_for
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually
from tests.kits.discord_kit import (
    MENTION,
    discord_app,
    discord_settings,
)
from tests.kits.image_kit import png
from tests.kits.script import ReportScript


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


async def test_a_workers_report_is_attached_in_the_thread_where_the_work_started(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    script = ReportScript()
    fake.responder = script
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = discord_fake.say(f"{MENTION} write the weekly report")
        await discord_fake.until(lambda posts: bool(discord_fake.uploads))
    (upload,) = discord_fake.uploads
    post = next(p for p in discord_fake.posts if p.id == upload[0])
    assert post.channel_id == mid  # the thread on the mention
    assert upload[1:] == ("report.md", script.report.encode())
    assert "report.md" in post.content and "Writer" in post.content


async def test_many_files_are_split_across_messages_and_a_too_large_one_fails_clearly(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    names = [f"part-{i:02}.txt" for i in range(12)]

    def responder(call: Call) -> list[dict]:
        if "a huge one" in call.last_text:
            return [tool("send_message", to="human", content="big", files=["huge.bin"])]
        if "a huge one" in call.all_text:
            return [text("done")]
        written = call.all_text.count("Wrote")
        if written < len(names):
            return [tool("write_file", path=names[written], content=f"file {written}")]
        if "Sent to" in call.last_text:
            return [text("all sent")]
        return [tool("send_message", to="human", content="here they are", files=names)]

    fake.responder = responder
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = discord_fake.say(f"{MENTION} send me twelve files")
        await discord_fake.until(lambda posts: len(discord_fake.uploads) == 12)
        space = workspace_for("coordinator", f"discord:{dp.GENERAL}/{mid}")
        huge = settings.data_dir / "workspaces" / space / "huge.bin"
        huge.write_bytes(b"x" * (11 * 1024 * 1024))  # over Discord's 10 MiB per message
        discord_fake.say("and a huge one", channel=mid)
        await eventually(lambda: bool(events(settings.data_dir, "outbox.failed")))
    with_files = [p for p in discord_fake.in_channel(mid) if p.files]
    assert [len(p.files) for p in with_files] == [10, 2]
    assert with_files[0].content.endswith("here they are")
    assert sorted(name for _, name, _ in discord_fake.uploads) == names
    (failed,) = events(settings.data_dir, "outbox.failed")
    assert "huge.bin" in failed["data"]["error"] and "Discord" in failed["data"]["error"]


async def test_an_expired_attachment_link_is_a_note_and_the_message_is_answered(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        gone = discord_fake.attachment("old.txt", b"expired")
        discord_fake.hosted.pop(gone["id"])  # Discord's signed CDN link has expired: 404
        mid = discord_fake.say(f"{MENTION} read this", attachments=[gone])
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(mid)) == 2)
    assert "old.txt" in fake.calls[0].all_text and "HTTP 404" in fake.calls[0].all_text
    assert len(discord_fake.downloads) == 1  # a 404 is not retried
    assert any("old.txt" in p.content for p in discord_fake.in_channel(mid))
