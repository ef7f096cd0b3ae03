"""Files people send in Slack reach the model: the real slack-bolt/slack-sdk against the
fake Slack (file objects in message events, downloads that need the bot token) and the
fake Anthropic API, whose recorded request bodies show what the model was given."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import pytest

from bot import cli
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events, eventually
from tests.kits.image_kit import png
from tests.kits.proc import Switchboard
from tests.kits.script import ReportScript
from tests.kits.slack_kit import (
    MENTION,
    heard,
    slack_app,
    slack_settings,
    texts,
)

LOG = b"2026-11-23 03:12:01 ERROR db: connection refused (pool exhausted)\n" * 20


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


async def test_a_workers_report_is_uploaded_into_the_thread_where_the_work_started(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    script = ReportScript()
    fake.responder = script
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} write the weekly report", channel="C1")
        await slack.until(lambda s: len(s.uploads) == 1 and any("ready" in t for t in texts(s)))
    (upload,) = slack.uploads
    assert upload["channel"] == "C1" and upload["thread_ts"] == ts
    assert [(f["name"], f["data"]) for f in upload["files"]] == [
        ("report.md", script.report.encode())
    ]
    assert "report.md" in upload["initial_comment"] and "Writer" in upload["initial_comment"]
    assert len(slack.method_calls("files.getUploadURLExternal")) == 1


async def test_an_upload_whose_answer_was_lost_is_not_uploaded_again(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Slack completed the upload but the answer never came (a cut connection): the retry
    asks files.info, finds the file shared, and uploads nothing twice."""
    script = ReportScript()
    fake.responder = script
    slack.fail_after_complete = 1
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} write the weekly report", channel="C1")
        await slack.until(lambda s: any("ready" in t for t in texts(s)))
        await eventually(lambda: bool(events(tmp_path, "message.sent")) and all_sent(tmp_path))
    assert len(slack.uploads) == 1
    assert len(slack.method_calls("files.getUploadURLExternal")) == 1
    assert len(slack.method_calls("files.info")) == 1  # the lookup that found it shared
    assert [e["data"]["error"] for e in events(tmp_path, "outbox.retry")]


def all_sent(data_dir: Path) -> bool:
    sent = {e["data"]["id"] for e in events(data_dir, "message.sent")}
    return len(sent) >= 3  # the coordinator's two replies and the worker's files


def test_killed_between_an_upload_and_its_record_the_file_is_not_uploaded_twice(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """`switchboard run` is killed (-9) after Slack shared the report but before the
    answer reached it; the next start finds the file shared and uploads nothing."""
    fake.responder = ReportScript()
    data = tmp_path / "data"
    env = {**fake.env(), **slack.env(), "SWITCHBOARD_DATA_DIR": str(data)}
    slack.completes_open.clear()
    first = Switchboard(["run"], env, tmp_path)
    try:
        slack.post(f"{MENTION} write the weekly report", channel="C1")
        slack.wait_for(lambda s: len(s.uploads) == 1, timeout=30)
    finally:
        first.kill()
    slack.completes_open.set()
    second = Switchboard(["run"], env, tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not any(e["agent_id"] == "Writer" for e in events(data, "message.sent")):
            assert time.monotonic() < deadline, "the report's message was never marked sent"
            time.sleep(0.05)
    finally:
        second.kill()
    assert len(slack.uploads) == 1
    assert len(slack.method_calls("files.getUploadURLExternal")) == 1
    assert len(slack.method_calls("files.info")) >= 1


async def test_a_restart_mid_download_keeps_the_saved_file_and_fetches_only_the_rest(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        first = slack.file("one.txt", b"first file")
        slack.post(f"{MENTION} warm-up", files=[first])
        await slack.until(lambda s: len(s.posts) == 1)  # one.txt is saved and known
        second = slack.file("two.txt", b"second file")
        slack.gated.add(second["id"])  # two.txt hangs: the process stops meanwhile
        slack.post(f"{MENTION} both please", files=[first, second])
        await slack.until(lambda s: [d for d, _ in s.downloads].count(second["id"]) == 1)
    slack.downloads_open.set()
    assert len(fake.calls) == 1  # the held message was not answered: its files were not in
    async with slack_app(settings):
        await slack.until(lambda s: len(s.posts) == 2)
    fetched = [d for d, _ in slack.downloads]
    assert fetched.count(first["id"]) == 2  # once per message: saved per message, by hash
    assert fetched.count(second["id"]) == 2  # the cut download, then the one after restart
    assert "second file" in fake.calls[1].all_text and "first file" in fake.calls[1].all_text
    assert len(list((tmp_path / "files").rglob("one.txt"))) == 1  # one copy on disk


async def test_a_download_that_times_out_is_retried_then_noted(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        assert app.human.intake is not None
        app.human.intake.timeout, app.human.intake.retry_base = 0.2, 0.05
        f = slack.file("slow.log", b"never arrives")
        slack.gated.add(f["id"])
        slack.post(f"{MENTION} look at this", files=[f])
        await slack.until(lambda s: len(s.posts) == 2)
        slack.downloads_open.set()
    assert [d for d, _ in slack.downloads] == [f["id"]] * 3
    assert "slow.log" in fake.calls[0].all_text and "timed out" in fake.calls[0].all_text
    assert any("slow.log" in t and "timed out" in t for t in texts(slack))


async def test_a_slack_connect_file_is_looked_up_with_files_info(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Files shared from another organisation come as `file_access: check_file_info`
    with only an id: files.info gives the download link."""
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        hosted = slack.file("partner.csv", b"region,revenue\nemea,42\n", "text/csv")
        stub = {"id": hosted["id"], "file_access": "check_file_info", "created": 1}
        slack.post(f"{MENTION} numbers from the partner", files=[stub])
        await slack.until(lambda s: len(s.posts) == 1)
    assert "emea,42" in fake.calls[0].all_text
    assert [c.params["file"] for c in slack.method_calls("files.info")] == [hosted["id"]]


async def test_status_shows_messages_waiting_for_their_files(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, capsys: pytest.CaptureFixture[str]
) -> None:
    """`switchboard status`, read from the data dir while the bot runs, names a message
    held until its download ends, and says nothing of it once it is answered."""
    fake.responder = heard
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        f = slack.file("slow.log", b"arrives late")
        slack.gated.add(f["id"])
        slack.post(f"{MENTION} look at this", files=[f])
        await slack.until(lambda s: len(s.downloads) == 1)
        assert await asyncio.to_thread(cli.status, settings) == 0
        held = capsys.readouterr().out
        slack.downloads_open.set()
        await slack.until(lambda s: len(s.posts) == 1)
        assert await asyncio.to_thread(cli.status, settings) == 0
        after = capsys.readouterr().out
    line = next(x for x in held.splitlines() if x.startswith("Waiting for file downloads"))
    assert "1 message(s), 1 file(s) still to fetch" in line and "ago" in line
    assert "Waiting for file downloads" not in after and "Outbox:" in after
    assert "arrives late" in fake.calls[0].all_text
