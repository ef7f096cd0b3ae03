"""Issue 17 by email, from outside (real dovecot, a receiving MX that adds
Authentication-Results): with no approvers listed, the person who asked may not approve
their own call by mail and a colleague's reply to the request decides it; a request
whose arguments are too long to show carries them in full as an attached file; the
audit log names the requester and the decider by their platform ids, `how` email."""

from __future__ import annotations

import json
from email.message import EmailMessage
from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.email.person import body_text
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings

SQL = "DROP TABLE payroll"
PADDING = "p" * 3000


def attached(mail: EmailMessage) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for part in mail.iter_attachments():
        payload = part.get_payload(decode=True)
        found[part.get_filename() or ""] = payload if isinstance(payload, bytes) else b""
    return found


async def test_a_colleague_decides_by_mail_the_requester_cannot_and_the_audit_names_both(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = caller
    ann, bot = world.ann, world.bot
    bob = world.person("bob")
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["run_*"])
    env = world.env(EMAIL_ALLOWED_SENDERS=f"{ann.address},{bob.address}")
    settings = tools_settings(tmp_path, fake, [entry], **env)
    args = json.dumps({"padding": PADDING, "sql": SQL})
    async with email_app(settings) as app:
        await app.mcp.wait_connected(30)
        await ann.send(ann.compose(bot, "db", f"call ops__run_query {args}"))
        (request,) = await ann.wait_mail(1, timeout=30, match="Approval needed")
        assert "[#" in str(request["Subject"])
        shown = body_text(request)
        assert f'"sql": "{SQL}"' in shown and PADDING not in shown
        files = attached(request)
        assert json.loads(files["ops__run_query-arguments.json"]) == {
            "sql": SQL,
            "padding": PADDING,
        }
        await ann.send(ann.reply_quoting(request, "approve", bot))
        await ann.wait_mail(1, timeout=30, match="someone else has to decide")
        assert calls(tmp_path / "calls.jsonl", "run_query") == []
        await bob.send(bob.reply_quoting(request, "approve", bot))
        await ann.wait_mail(1, timeout=30, match="result: query ran")
        lines = [x for x in app.store.audit.since(0) if x.tool == "ops__run_query"]
    assert len(calls(tmp_path / "calls.jsonl", "run_query")) == 1
    steps = [(x.type, x.outcome) for x in lines]
    assert steps == [
        ("tool.called", "approval"),
        ("approval.requested", "pending"),
        ("approval.decided", "approved"),
        ("tool.called", "ok"),
    ]
    assert {x.person_id for x in lines} == {f"email:{ann.address}"}
    decided = next(x for x in lines if x.type == "approval.decided")
    assert (decided.decider_id, decided.how) == (f"email:{bob.address}", "email")
