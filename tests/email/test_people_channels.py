"""One person on Slack and by email (issue 11): the real Slack channel against the
fake Slack, the real email channel against dovecot, one app.

Ann's Slack id is not in `[[people]]`; her address is. `users.info` (the token has
`users:read.email`) links the id to her, so what she says in Slack and by email is
one profile, and her `@Alice ...` mail answers the question Alice asked in Slack.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.app import App
from channels.slack.channel import SlackChannel
from config.settings import Settings, load_settings
from tests.email.conftest import MailWorld
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.app_kit import events
from tests.kits.script import TeamScript

SCOPES = "chat:write,app_mentions:read,im:history,users:read,users:read.email"


@pytest.fixture(name="slack")
def slack_fixture() -> Iterator[FakeSlack]:
    with FakeSlack(scopes=SCOPES) as server:
        yield server


def both_settings(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, slack: FakeSlack
) -> Settings:
    config = tmp_path / "switchboard.toml"
    config.write_text(f'[[people]]\nname = "Ann"\nemail = "{world.ann.address}"\n')
    environ = {
        **fake.env(),
        **world.env(),
        **slack.env(),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SLACK_PACE_SECONDS": "0.02",
        "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.05",
    }
    return load_settings(config, environ)


@contextlib.asynccontextmanager
async def both_app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings, ["slack", "email"])
    await app.start()
    try:
        (channel,) = [c for c in app.channels if isinstance(c, SlackChannel)]
        await asyncio.wait_for(channel.ready.wait(), 10)
        yield app
    finally:
        await app.stop()


async def test_an_email_answer_to_a_question_asked_in_slack_resumes_the_worker(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, slack: FakeSlack
) -> None:
    slack.users["UANN"] = {"name": "Ann", "email": world.ann.address.upper()}
    script = TeamScript(worker="Alice", question="Data center or consumer GPUs?")
    fake.responder = script
    settings = both_settings(tmp_path, fake, world, slack)
    ann = world.ann
    async with both_app(settings):
        slack.post(f"<@{BOT_USER}> research GPUs. I prefer prices in euros.", user="UANN")
        await slack.until(lambda s: any("Data center or consumer" in p["text"] for p in s.posts))
        question = next(p for p in slack.posts if "Data center or consumer" in p["text"])
        await ann.send(ann.compose(world.bot, "GPUs", "@Alice consumer, please"))
        await slack.until(lambda s: any("Report based on: consumer" in p["text"] for p in s.posts))
        report = next(p for p in slack.posts if "Report based on" in p["text"])
        await ann.send(ann.compose(world.bot, "Another thing", "What should I budget?"))
        (answer,) = await ann.wait_mail(1, match="Re: Another thing")
        (receipt,) = await ann.wait_mail(1, match="has your answer")  # her answer, by mail
    assert report["thread_ts"] == question["thread_ts"]  # back in the Slack thread
    assert script.answers_seen == ["consumer, please"]
    assert len(slack.method_calls("users.info")) == 1  # linked once, then known
    profile = (settings.data_dir / "people/ann.md").read_text()
    assert profile.startswith("# Ann\n\n## Preferences\n- I prefer prices in euros.")
    by_mail = next(c for c in fake.calls if "What should I budget?" in c.last_text)
    assert "I prefer prices in euros." in by_mail.context  # one person, one profile
    assert "[Ann via email]" in by_mail.last_text
    resumed = [e for e in events(settings.data_dir, "worker.resumed")]
    assert len(resumed) == 1 and answer["Subject"] == "Re: Another thing"
    assert receipt["Subject"] == "Re: GPUs"
