"""The durable outbox: retries, order per target, Retry-After, permanent failures."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.core.channel import BaseChannel, PermanentDeliveryError, TransientDeliveryError
from bot.core.messages import DeliveryReceipt, Outbound, Target
from bot.store.core import Store
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, events, eventually, make_settings, running_app


class Flaky(BaseChannel):
    """A `discord` channel that fails as scripted, then records."""

    kind = "discord"
    pace_seconds = 0.0

    def __init__(self, script: list[Exception | None]) -> None:
        self.script = script
        self.sent: list[tuple[float, str]] = []

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        step = self.script.pop(0) if self.script else None
        if step is not None:
            raise step
        self.sent.append((time.monotonic(), msg.text))
        return DeliveryReceipt(platform_id=msg.id)


async def test_transient_failures_are_retried_in_order(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    flaky = Flaky([TransientDeliveryError("503"), TransientDeliveryError("timeout")])
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder(), flaky]) as app:
        for i in range(3):
            app.human.say(Outbound("coordinator", Target.parse("discord:1"), f"m{i}"))
        await eventually(lambda: len(flaky.sent) == 3)
    assert [text for _, text in flaky.sent] == ["m0", "m1", "m2"]
    assert len(events(tmp_path, "outbox.retry")) == 2


async def test_retry_after_is_honoured(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    flaky = Flaky([TransientDeliveryError("429", retry_after=0.4)])
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder(), flaky]) as app:
        start = time.monotonic()
        app.human.say(Outbound("coordinator", Target.parse("discord:1"), "hello"))
        await eventually(lambda: len(flaky.sent) == 1)
    assert flaky.sent[0][0] - start >= 0.4


async def test_permanent_failure_is_reported_to_home(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    flaky = Flaky([PermanentDeliveryError("unknown channel")])
    home = Recorder()
    settings = make_settings(tmp_path, fake, SWITCHBOARD_HOME="terminal", **database_env)
    async with running_app(settings, [home, flaky]) as app:
        app.human.say(Outbound("Alice", Target.parse("discord:9"), "result"))
        sent = await home.wait_count(1)
    assert sent[0].text == ("Could not deliver a message from Alice to discord:9: unknown channel")
    assert events(tmp_path, "outbox.failed")[0]["data"]["error"] == "unknown channel"


async def test_a_target_without_a_channel_fails_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder()]) as app:
        app.human.say(Outbound("coordinator", Target.parse("email:a@b.c"), "hi"))
        await eventually(lambda: bool(events(tmp_path, "outbox.failed")))
        assert app.store.outbox.outbox_counts() == {"failed": 1}
    failed = events(tmp_path, "outbox.failed")
    assert len(failed) == 1 and failed[0]["data"]["error"] == "no email channel is configured"


class Slow(BaseChannel):
    """A `discord` channel whose every post takes a while."""

    kind = "discord"
    pace_seconds = 0.0

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started: list[str] = []
        self.sent: list[str] = []

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        self.started.append(msg.text)
        await asyncio.sleep(self.seconds)
        self.sent.append(msg.text)
        return DeliveryReceipt(platform_id=msg.id)


async def test_a_stop_lets_a_post_under_way_finish_and_starts_no_other(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    # Cancelled mid-request, a post may have reached the platform and would be sent
    # again at the next start.
    slow = Slow(0.3)
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder(), slow]) as app:
        for text in ("first", "second"):
            app.human.say(Outbound("coordinator", Target.parse("discord:1"), text))
        await eventually(lambda: slow.started == ["first"])
    assert slow.sent == ["first"]
    store = Store(settings.database)
    assert store.outbox.outbox_counts() == {
        "sent": 1,
        "pending": 1,
    }  # "second" waits for the next start
    store.close()


class Queuing(BaseChannel):
    """A `discord` channel whose delivery of `first` queues `second` for the same target
    while it is under way: before an await, or as it returns (`run` looks at the
    outbox's slice after it, while the drain still holds the target)."""

    kind = "discord"
    pace_seconds = 0.0

    def __init__(self, say: Callable[[Outbound], None], then_wait: bool) -> None:
        self.say, self.then_wait = say, then_wait
        self.sent: list[str] = []

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        if msg.text == "first":
            self.say(Outbound("coordinator", Target.parse("discord:1"), "second"))
            if self.then_wait:
                await asyncio.sleep(0.05)
        self.sent.append(msg.text)
        return DeliveryReceipt(platform_id=msg.id)


@pytest.mark.parametrize("then_wait", [True, False], ids=["before-an-await", "as-it-returns"])
async def test_a_row_queued_while_its_target_is_drained_is_delivered_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str], then_wait: bool
) -> None:
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder()]) as app:
        channel = Queuing(app.human.say, then_wait)
        app.human.outbox.add_channel(channel)
        app.human.say(Outbound("coordinator", Target.parse("discord:1"), "first"))
        await eventually(lambda: channel.sent == ["first", "second"])
        await asyncio.sleep(0.2)
    assert channel.sent == ["first", "second"]


async def test_a_target_drained_of_its_one_row_is_read_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    flaky = Flaky([])
    settings = make_settings(tmp_path, fake, **database_env)
    async with running_app(settings, [Recorder(), flaky]) as app:
        tables, reads = app.human.outbox.store.outbox, []
        read = tables.pending_outbox
        tables.pending_outbox = lambda *a: reads.append(a) or read(*a)  # type: ignore[method-assign]
        for i in range(5):
            app.human.say(Outbound("coordinator", Target.parse("discord:1"), f"m{i}"))
            await eventually(lambda n=i + 1: len(flaky.sent) == n)
            await asyncio.sleep(0.02)
    assert len(reads) == 5  # not a second, empty read after each delivery
