"""A 200 KB page of nested lists arriving by mail leaves Slack answered meanwhile: the
app runs Slack (the fake) and email (dovecot) at once, as `switchboard run` does."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from bot.app import App
from channels.slack.channel import SlackChannel
from tests.email.conftest import MailWorld, channel_of
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.slack_kit import MENTION

DEPTH = 10_500  # about 200 KB of <ul><li>: 47 s of html2text on the event loop before


def answered_in(slack: FakeSlack, words: str, bound: float) -> float:
    """From a thread of its own (a blocked event loop cannot hide): post a mention,
    seconds until the bot's reply is in the fake Slack (at most `bound`)."""
    start = time.monotonic()
    slack.post(f"{MENTION} {words}", channel="C1")
    while time.monotonic() - start < bound:
        if any(words in str(p.get("text")) for p in slack.posts):
            return time.monotonic() - start
        time.sleep(0.005)
    return bound


async def test_a_nested_list_mail_leaves_a_slack_mention_answered(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text(f"heard {call.last_text[-30:]}")]
    ann = world.ann
    env = {**slack.env("socket"), "SLACK_PACE_SECONDS": "0.02"}
    app = App(world.settings(tmp_path, fake, **env), ["slack", "email"])
    await app.start()
    try:
        (sl,) = [c for c in app.channels if isinstance(c, SlackChannel)]
        await asyncio.wait_for(sl.ready.wait(), 10)
        watcher = channel_of(app).watcher
        handle = watcher.handle
        took: list[float] = []

        async def observed(raw: bytes, size: int) -> None:
            if b"nested" in raw:  # the mention is posted the moment the mail is handled
                threading.Thread(
                    target=lambda: took.append(answered_in(slack, "ping", 20.0))
                ).start()
            await handle(raw, size)

        watcher.handle = observed
        mail = ann.compose(world.bot, "nested", "")
        mail.add_alternative("<ul><li>x" * DEPTH + "</li></ul>" * DEPTH, subtype="html")
        await ann.send(mail)
        await ann.wait_mail(1, match="heard", timeout=30)
        await eventually(lambda: bool(took), timeout=25)
    finally:
        await app.stop()
    # behaviour, with a wide margin: answered while the mail was parsed and converted,
    # not after it (which took 47 s); the benchmark measures the latency itself
    assert took and took[0] < 5.0
