"""Files people send in Slack reach the model: the real slack-bolt/slack-sdk against the
fake Slack (file objects in message events, downloads that need the bot token) and the
fake Anthropic API, whose recorded request bodies show what the model was given."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kit import events
from tests.slack_kit import (  # noqa: F401
    MENTION,
    heard,
    posted,
    slack_app,
    slack_fake_fixture,
    slack_settings,
    texts,
)

LOG = b"2026-11-23 03:12:01 ERROR db: connection refused (pool exhausted)\n" * 20


def png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny) PNG, so the type sniffing and size checks see real bytes."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def user_blocks(fake: FakeAnthropic) -> list[dict]:
    return [b for m in fake.calls[0].messages if m["role"] == "user" for b in m["content"]]


async def test_a_log_file_sent_in_slack_reaches_the_model_inline(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        f = slack.file("app.log", LOG)
        slack.post(f"{MENTION} what went wrong?", subtype="file_share", files=[f])
        await slack.until(lambda s: len(s.posts) == 1)
    body = fake.calls[0].all_text
    assert "connection refused (pool exhausted)" in body
    assert "app.log" in body and "what went wrong?" in body
    assert slack.downloads == [(f["id"], "xoxb-fake")]  # fetched once, with the bot token
    saved = list((tmp_path / "files").rglob("app.log"))
    assert len(saved) == 1 and saved[0].read_bytes() == LOG


async def test_an_image_reaches_the_model_as_an_image_block(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    image = png()
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        f = slack.file("screenshot.png", image, "image/png")
        slack.post(f"{MENTION} see this", files=[f])
        await slack.until(lambda s: len(s.posts) == 1)
    images = [b for b in user_blocks(fake) if b["type"] == "image"]
    assert len(images) == 1
    source = images[0]["source"]
    assert source["type"] == "base64" and source["media_type"] == "image/png"
    assert base64.b64decode(source["data"]) == image


async def test_a_file_the_token_cannot_read_is_a_note_and_the_message_is_answered(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        f = slack.file("secret.txt", b"top secret")
        slack.fail_download(f["id"], 403)
        slack.post(f"{MENTION} read this", files=[f])
        await slack.until(lambda s: len(s.posts) == 2)
    assert "top secret" not in fake.calls[0].all_text
    assert "secret.txt" in fake.calls[0].all_text and "files:read" in fake.calls[0].all_text
    assert len(slack.downloads) == 1  # a 403 is not retried
    note = next(t for t in texts(slack) if "could be read" in t)
    assert "secret.txt" in note and "files:read" in note


async def test_a_failing_download_is_retried_with_backoff(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        f = slack.file("trace.txt", b"Traceback: boom")
        slack.fail_download(f["id"], 503, times=2)
        slack.post(f"{MENTION} why?", files=[f])
        await slack.until(lambda s: len(s.posts) == 1)
    assert len(slack.downloads) == 3
    assert "Traceback: boom" in fake.calls[0].all_text
    assert len(events(tmp_path, "file.fetch_failed")) == 2


async def test_too_large_binary_and_path_like_names(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_FILE_MAX_BYTES="4096")
    async with slack_app(settings):
        big = slack.file("huge.log", b"x" * 10_000)
        binary = slack.file("dump.txt", b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
        sneaky = slack.file("../../etc/passwd", b"root:x:0:0")
        empty = slack.file("", b"unnamed bytes")
        liar = slack.file("photo.png", b"not an image at all", "image/png")
        slack.post(f"{MENTION} files", files=[big, binary, sneaky, empty, liar])
        await slack.until(lambda s: len(s.posts) == 2)
    body = fake.calls[0].all_text
    assert "SWITCHBOARD_FILE_MAX_BYTES" in body and "huge.log" in body
    assert [d for d in slack.downloads if d[0] == big["id"]] == []  # the size said no
    assert "read_file" in body and "dump.txt" in body  # binary: named, not inlined
    assert "root:x:0:0" in body  # the sneaky file is read, but saved under a plain name
    assert not (tmp_path.parent / "etc").exists()
    assert list((tmp_path / "files").rglob("passwd"))
    assert "unnamed bytes" in body
    assert "not an image type" in body and not any(b["type"] == "image" for b in user_blocks(fake))
    note = next(t for t in texts(slack) if "could be read" in t)
    assert "huge.log" in note and "photo.png" in note
