"""A disk that fills up mid-run: said on /healthz and in the log, new messages refused
before the ack (the platform sends them again), nothing acknowledged lost.

The store-level test fills a real 2 MB tmpfs (skipped where `mount` is not allowed); the
Slack test makes the disk watch see a full disk (the store's write edge), and the event
log writes to /dev/full (ENOSPC on every write)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.events import EventLog
from bot.ops.health import LLMHealth, health
from bot.store.core import Store, StoreError
from bot.store.space import DiskWatch, StoreFull
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import inbound
from tests.kits.slack_kit import slack_app, slack_settings


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:  # the test command runs as root (CI too): mount works
        pytest.fail(f"a 2 MB tmpfs needs root to mount: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_full_tmpfs_refuses_new_messages_and_keeps_the_journaled_ones(
    tmpfs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    filler = tmpfs / "filler"
    filler.write_bytes(b"\0" * 600_000)
    store = Store(tmpfs / "switchboard.db")
    clock = Clock()
    store.space = DiskWatch(tmpfs, clock)
    kept: list[int] = []
    with caplog.at_level(logging.ERROR):
        with pytest.raises(StoreError):
            for i in range(10_000):
                clock.now += 0.1  # the watch looks again every ten messages
                with store.tx():
                    row = store.journal(inbound("x" * 2000, message_id=f"m{i}"), "routed")
                assert row is not None
                kept.append(row)
    assert store.space.full and len(kept) > 20
    assert "is full" in caplog.text
    with pytest.raises(StoreFull):  # refused before anything is written
        store.journal(inbound("one more", message_id="late"))
    ids = [r[0] for r in store.execute("SELECT id FROM inbound ORDER BY id")]
    assert ids == kept  # every message journaled (acknowledged) before is there
    filler.unlink()
    clock.now += 2
    assert store.space.state() == "ok"
    assert store.journal(inbound("after", message_id="after")) is not None
    store.close()


def test_a_full_disk_loses_event_lines_not_the_work(caplog: pytest.LogCaptureFixture) -> None:
    log = EventLog(Path("/dev/full"))
    seen = []
    log.subscribe(seen.append)
    with caplog.at_level(logging.ERROR):
        log.emit("message.received", "human", n=1)
        log.emit("message.received", "human", n=2)
    assert [e.data["n"] for e in seen] == [1, 2] and log.write_failed
    assert caplog.text.count("could not be written") == 1
    with contextlib.suppress(OSError):
        log.close()


async def test_slack_messages_wait_unacked_while_the_disk_is_full(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("answered: " + call.last_text.splitlines()[-1])]
    slack.retry_seconds = 3.0  # Slack sends an unacked event again (after 1 and 5 minutes)
    async with slack_app(slack_settings(tmp_path / "data", fake, slack)) as (app, _):
        watch = app.store.space
        assert watch is not None
        asked: list[bool] = []
        watch.full = True
        watch.check = lambda: asked.append(watch.full) or watch.full  # type: ignore[method-assign]
        slack.post("hello while full", channel="D1", channel_type="im")
        for _ in range(100):  # until the bot has tried to journal it, and refused
            if asked:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert slack.unacked() and not fake.calls
        status, body = health(app.ops.view, LLMHealth())
        assert (status, body["disk"]) == (503, "full")
        assert not app.store.inbound_between(0, 2e9)
        watch.full = False  # room again: the redelivered event is taken and answered
        await asyncio.to_thread(
            slack.wait_for, lambda s: any("hello while full" in str(p["text"]) for p in s.posts), 40
        )
        assert not [e for e in slack.unacked() if e.body.get("event", {}).get("user") == "UANN"]
        assert health(app.ops.view, LLMHealth())[1]["disk"] == "ok"
