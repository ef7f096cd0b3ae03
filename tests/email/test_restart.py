"""`switchboard run` with email, killed (SIGKILL) between a worker's question and the
person's answer: the new process resumes exactly that worker, asks nothing twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bot.store.core import Store
from tests.email.conftest import MailWorld
from tests.email.person import body_text
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.proc import Switchboard
from tests.kits.script import TeamScript


def _run(tmp_path: Path, fake: FakeAnthropic, world: MailWorld) -> Switchboard:
    env = {**fake.env(), **world.env(SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS="0.05")}
    return Switchboard(["--data-dir", str(tmp_path / "data"), "run"], env, tmp_path)


async def _question_recorded(db: Path, message_id: str, timeout: float = 10.0) -> None:
    """Wait until the bot has stored the question's Message-ID (its delivery is final)."""
    deadline = time.monotonic() + timeout
    while True:
        store = Store(db, readonly=True)
        try:
            if any(message_id in q.refs for q in store.agents.open_questions()):
                return
        finally:
            store.close()
        assert time.monotonic() < deadline, "the question's Message-ID was never recorded"
        await asyncio.sleep(0.05)


async def test_bot_restarted_between_question_and_reply_resumes_the_worker(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    ann = world.ann
    script = TeamScript(via=f"email:{ann.address}")
    fake.responder = script
    first = _run(tmp_path, fake, world)
    try:
        await ann.send(ann.compose(world.bot, "GPU research", "please research GPUs"))
        (question,) = await ann.wait_mail(1, match="Alice asks")
        await _question_recorded(tmp_path / "data" / "switchboard.db", question["Message-ID"])
    finally:
        first.kill()

    second = _run(tmp_path, fake, world)
    try:
        await ann.send(ann.reply_quoting(question, "Consumer cards are fine.", world.bot))
        (report,) = await ann.wait_mail(1, match="Report based on")
        await asyncio.sleep(0.5)  # room for a duplicate question or report
        mails = await ann.inbox()
    finally:
        second.proc.terminate()
        second.proc.wait(15)
    assert script.answers_seen == ["Consumer cards are fine."]
    assert body_text(report).strip() == "Alice finished. Report based on: Consumer cards are fine."
    asked = sum(str(m["Subject"]).startswith("Alice asks") for m in mails)
    assert asked == 1, "the question was sent again"
    assert sorted(body_text(m).strip() for m in mails) == [
        "Alice finished. Report based on: Consumer cards are fine.",
        "Alice has your answer and is working on it; you will hear back here.",  # receipt
        "Alice is on it.",
        "Data center or consumer GPUs?",
    ]
