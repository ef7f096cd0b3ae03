"""Email attachments in real dovecot mail: saved, shown to the model, opened with read_file."""

from __future__ import annotations

import re
from pathlib import Path

from tests.email.conftest import MailWorld, email_app
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool, unwrap
from tests.kits.app_kit import events, eventually
from tests.kits.script import ReportScript

ROWS = "".join(f"host-{i},cpu,{i % 100}\n" for i in range(2000))  # ~30 KB: not inlined


def reader(call: Call) -> list[dict]:
    results = call.tool_results()
    if results:
        return [text(f"The file says: {unwrap(results[0]['content']).splitlines()[1]}")]
    path = re.search(r"saved as (files/\S+?\.csv)", call.last_text)
    if path is None:
        return [text("no file seen")]
    return [tool("read_file", path=path.group(1), limit=5)]


async def test_an_email_attachment_is_read_with_read_file(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    fake.responder = reader
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        mail = ann.compose(world.bot, "CPU numbers", "Which host is busiest?")
        mail.add_attachment(ROWS.encode(), maintype="text", subtype="csv", filename="cpu.csv")
        mail.add_attachment(
            b"%PDF-1.4 tiny", maintype="application", subtype="pdf", filename="../../notes.pdf"
        )
        await ann.send(mail)
        (answer,) = await ann.wait_mail(1)
    assert "The file says: host-0,cpu,0" in answer.get_body(("plain",)).get_content()
    first = fake.calls[0]
    assert "cpu.csv" in first.last_text and "host-1999" not in first.all_text
    documents = [b for b in first.blocks() if b["type"] == "document"]
    assert [d["source"]["media_type"] for d in documents] == ["application/pdf"]
    assert [p.name for p in (tmp_path / "files").rglob("*.pdf")] == ["notes.pdf"]


async def test_a_workers_report_comes_back_as_a_mail_attachment(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    script = ReportScript()
    fake.responder = script
    ann = world.ann
    async with email_app(world.settings(tmp_path, fake)):
        await ann.send(ann.compose(world.bot, "Weekly", "Please write the weekly report."))
        mails = await ann.wait_mail(1, match="Files from my result")
    mail = mails[0]
    (part,) = list(mail.iter_attachments())
    assert part.get_filename() == "report.md"
    assert part.get_payload(decode=True) == script.report.encode()
    assert mail["Subject"] == "Re: Weekly"  # in the thread where the work started


async def test_read_channel_reads_both_sides_of_the_mail_in_time_order(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    ann = world.ann
    seen: list[str] = []

    def responder(call: Call) -> list[dict]:
        results = call.tool_results()
        if results:
            seen.extend(unwrap(str(r["content"])) for r in results)
            return [text("Read it.")]
        if "second" in call.last_text:
            target = f"email:{ann.address.upper()}"  # an address is not case-sensitive
            return [
                tool("read_channel", target=target),
                tool("read_channel", target=target, limit=2),
            ]
        return [text("noted: I will look at the VPN")]

    fake.responder = responder
    async with email_app(world.settings(tmp_path, fake)):
        await ann.send(ann.compose(world.bot, "One", "first: the VPN is flaky"))
        await ann.wait_mail(1)
        await ann.send(ann.compose(world.bot, "Two", "second: what did I say?"))
        await ann.wait_mail(1, match="Read it")
    whole, newest = seen
    lines = whole.splitlines()
    assert "3 message(s)" in lines[0] and "cut" not in lines[0]
    assert re.search(r"UTC Ann\d+: first: the VPN is flaky \[Subject: One\]$", lines[1])
    assert f"{world.bot} (this bot): noted: I will look at the VPN" in lines[2]
    assert re.search(r"UTC Ann\d+: second: what did I say\? \[Subject: Two\]$", lines[3])
    assert "2 message(s)" in newest and "cut" in newest.splitlines()[0]
    assert "VPN is flaky" not in newest and "noted:" in newest and "second:" in newest


async def test_files_over_email_max_bytes_fail_clearly(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld
) -> None:
    def responder(call: Call) -> list[dict]:
        if "Wrote" in call.last_text:
            return [tool("send_message", to="human", content="the dump", files=["dump.txt"])]
        if call.tool_results():
            return [text("tried")]
        return [tool("write_file", path="dump.txt", content="y" * 30_000)]

    fake.responder = responder
    ann = world.ann
    settings = world.settings(tmp_path, fake, EMAIL_MAX_BYTES="20000")
    async with email_app(settings):
        await ann.send(ann.compose(world.bot, "Dump", "Send me the dump."))
        await eventually(lambda: bool(events(tmp_path, "outbox.failed")))
    (failed,) = events(tmp_path, "outbox.failed")
    assert "dump.txt" in failed["data"]["error"] and "EMAIL_MAX_BYTES" in failed["data"]["error"]
