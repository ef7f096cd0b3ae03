"""Parsing, composing and filtering mail, without servers."""

from __future__ import annotations

import asyncio
import contextlib
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from bot.app import App
from bot.core.messages import Outbound, Target
from channels.email import safety
from channels.email.compose import Thread, compose, reply_subject, speaker
from channels.email.parse import parse_mail, strip_reply
from channels.email.safety import RateGuard, allowed
from config.settings import SettingsError, load_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import make_settings


def test_quoted_history_and_signature_are_stripped() -> None:
    text = (
        "Data center only.\n\n-- \nAnn Smith\nHead of Ops\n\n"
        "On Mon, 1 Jan 2024 at 10:00, Alice (Switchboard) <bot@x.org> wrote:\n"
        "> Data center or consumer?\n"
    )
    assert strip_reply(text) == "Data center only."
    assert strip_reply("Yes.\n\n> bare quote\n> more\n") == "Yes."
    assert strip_reply("- one\n- two\n") == "- one\n- two"  # lists are not signatures
    assert strip_reply("> all quoted\n") == "> all quoted"  # nothing new: keep it


def test_html_only_mail_is_read_as_text_and_attachments_are_noted() -> None:
    raw = (
        b"From: Ann <ann@x.org>\r\nMessage-ID: <1@x>\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n"
        b"Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\n"
        b"Content-Type: text/html; charset=latin-1\r\n\r\n<p>Hallo <b>Welt</b> \xe4</p>\r\n"
        b"--B\r\nContent-Type: application/pdf\r\n"
        b'Content-Disposition: attachment; filename="report.pdf"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--B--\r\n"
    )
    mail = parse_mail(raw, 1000)
    assert mail.subject == "Grüße" and mail.sender == "ann@x.org"
    assert mail.text == "Hallo **Welt** ä"
    assert [(a.name, a.size) for a in mail.attachments] == [("report.pdf", 9)]


def test_long_mail_is_cut_and_missing_message_id_is_stable() -> None:
    raw = b"From: a@x.org\r\n\r\n" + b"word " * 10_000
    mail = parse_mail(raw, 500)
    assert mail.cut and len(mail.text) == 500
    assert mail.message_id == parse_mail(raw, 500).message_id
    assert mail.message_id.endswith("@no-message-id.invalid>")
    partial = parse_mail(b"From: a@x.org\r\n\r\nshort", 500, full_size=50_000_000)
    assert partial.cut and partial.size == 50_000_000


def test_thread_keys_come_from_references_then_in_reply_to() -> None:
    raw = b"Message-ID: <3@x>\r\nIn-Reply-To: <2@x>\r\nReferences: <1@x> <2@x>\r\n\r\nhi"
    mail = parse_mail(raw, 100)
    assert mail.root == "<1@x>" and mail.thread_refs == ["<2@x>", "<1@x>"]
    assert parse_mail(b"Message-ID: <3@x>\r\nIn-Reply-To: <2@x>\r\n\r\nhi", 100).root == "<2@x>"
    assert parse_mail(b"Message-ID: <3@x>\r\n\r\nhi", 100).root == "<3@x>"


def test_compose_threads_and_names_the_speaker() -> None:
    msg = Outbound("Alice", Target("email", "ann@x.org"), "# Done\n\n*yes*", "email:<1@x>")
    thread = Thread("Re: RE: Plan", ["<1@x>", "<2@x>"])
    mail = compose(msg, "bot@x.org", "ann@x.org", thread, key=b"k")
    parsed = message_from_bytes(bytes(mail), policy=policy.default)
    assert parsed["Subject"] == "Re: Plan"
    assert parsed["In-Reply-To"] == "<2@x>" and parsed["References"] == "<1@x> <2@x>"
    assert parsed["From"].addresses[0].display_name == "Alice (Switchboard)"
    # keyed: the outbox id (in events) does not tell the Message-ID; the same key, the same id
    message_id = parsed["Message-ID"]
    assert message_id.endswith("@x.org>") and msg.id not in message_id
    again = compose(msg, "bot@x.org", "ann@x.org", thread, key=b"k")["Message-ID"]
    other = compose(msg, "bot@x.org", "ann@x.org", thread, key=b"j")["Message-ID"]
    assert again == message_id != other
    assert parsed["X-Loop"] == "bot@x.org"
    html = parsed.get_body(preferencelist=("html",))
    assert html is not None and "<h1>Done</h1>" in html.get_content()
    assert reply_subject("") == "Re: your message" and speaker("switchboard") == "Switchboard"


def test_allow_list_and_rate_guard() -> None:
    allow = ["ann@x.org", "@team.org"]
    assert allowed("ann@x.org", allow) and allowed("bob@team.org", allow)
    assert not allowed("bob@x.org", allow) and not allowed("a@sub.team.org", allow)
    assert not allowed("ann@x.org", [])  # empty means nobody
    guard = RateGuard(2, window=10)
    assert guard.admit("a", now=0) and guard.admit("a", now=1) and not guard.admit("a", now=2)
    assert guard.admit("a", now=11.5)


def test_rate_guard_forgets_senders_silent_for_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safety, "MAX_SENDERS", 3)
    guard = RateGuard(1, window=10)
    assert all(guard.admit(s, now=0) for s in "abc")
    assert guard.admit("d", now=5) and len(guard._seen) == 4  # none silent for a window yet
    assert guard.admit("e", now=11) and set(guard._seen) == {"d", "e"}
    assert not guard.admit("d", now=12)  # a sender still inside its window keeps its count


def test_email_settings_errors_name_the_variable(tmp_path: Path) -> None:
    base = {
        "EMAIL_ADDRESS": "bot@x.org",
        "IMAP_HOST": "h",
        "IMAP_USER": "u",
        "IMAP_PASSWORD": "p",
        "SMTP_HOST": "h",
        "EMAIL_AUTHSERV_ID": "mx.x.org",
    }
    with pytest.raises(SettingsError, match=r"^EMAIL_TLS_CA_FILE: is not a readable file"):
        load_settings(None, {**base, "EMAIL_TLS_CA_FILE": str(tmp_path / "missing.pem")})
    with pytest.raises(SettingsError, match=r"^IMAP_IDLE_SECONDS: "):
        load_settings(None, {**base, "IMAP_IDLE_SECONDS": "1800"})
    with pytest.raises(SettingsError, match=r"^IMAP_TLS: "):
        load_settings(None, {**base, "IMAP_TLS": "tls"})
    conf = load_settings(None, {**base, "EMAIL_ALLOWED_SENDERS": "Ann@X.org, @Team.org"})
    assert conf.email_allowed_senders == ["ann@x.org", "@team.org"]


async def test_a_stop_ends_an_imap_task_that_swallowed_its_first_cancellation(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """Python 3.11's wait_for (aioimaplib's too) returns an answer that arrives with a
    cancellation and drops the cancellation: the IMAP task then idles on. A stop asks
    again until the task has ended, instead of waiting on it for ever."""
    settings = make_settings(
        tmp_path / "data", fake, EMAIL_ADDRESS="bot@localhost", IMAP_HOST="127.0.0.1",
        IMAP_USER="bot", IMAP_PASSWORD="x", SMTP_HOST="127.0.0.1", EMAIL_AUTHSERV_ID="mx.test",
    )  # fmt: skip
    app = App(settings, ["email"])
    app.build()
    (channel,) = app.channels

    async def stubborn() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)  # the cancellation a wait_for swallowed
        await asyncio.sleep(3600)

    imap = channel._task = asyncio.create_task(stubborn())
    stopping = asyncio.create_task(channel.stop())
    done, _ = await asyncio.wait({stopping}, timeout=15)  # asyncio.wait: never swallows
    for task in (stopping, imap):
        task.cancel()
    app.store.close()
    assert stopping in done and imap.done(), "the stop waited on the IMAP task for ever"
