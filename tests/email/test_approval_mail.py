"""An approval asked and answered by email: the request is a reply in the mail thread,
and the person's reply to it (`approve`, quoted history and all) decides."""

from __future__ import annotations

from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings


async def test_an_approval_answered_by_email_reply(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = caller
    ann = world.ann
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*"])
    # Ann asks for the call and approves it herself: only a listed approver may do that
    settings = tools_settings(
        tmp_path, fake, [entry], **world.env(SWITCHBOARD_APPROVERS=ann.address)
    )
    async with email_app(settings) as app:
        await app.mcp.wait_connected(30)
        start = ann.compose(world.bot, "api", 'call ops__restart_service {"service": "api"}')
        await ann.send(start)
        (request,) = await ann.wait_mail(1, timeout=30, match="Approval needed")
        assert request["In-Reply-To"] == start["Message-ID"]
        assert calls(tmp_path / "calls.jsonl", "restart_service") == []
        await ann.send(ann.reply_quoting(request, "approve", world.bot))
        await ann.wait_mail(1, timeout=30, match="result: api restarted")
        await ann.wait_mail(1, timeout=30, match="Approved by")
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1
