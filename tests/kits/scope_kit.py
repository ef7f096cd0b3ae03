"""The scope tests' scenes on the fake Slack: Ann sends the bot payroll.csv in a DM,
Bob asks in another channel (C2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.slack_api import FakeSlack
from tests.kits.slack_kit import MENTION, post_with, posted

PAYROLL = b"name,salary\nann,123456\nbob,98765\n"


async def ann_sends_payroll(slack: FakeSlack, tmp_path: Path) -> str:
    """Ann DMs the bot payroll.csv; the file's data-dir path."""
    f = slack.file("payroll.csv", PAYROLL, "text/csv")
    slack.post("here is the payroll", user="UANN", channel="DANN", channel_type="im", files=[f])
    await slack.until(lambda s: any(p["channel"] == "DANN" for p in s.posts), 20)
    saved = next((tmp_path / "files").rglob("payroll.csv"))
    return saved.relative_to(tmp_path).as_posix()


async def bob_asks(slack: FakeSlack, line: str, words: str) -> dict[str, Any]:
    slack.post(f"{MENTION} {line}", user="UBOB", channel="C2")
    await slack.until(posted(words), 20)
    return post_with(slack, words)
