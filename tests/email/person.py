"""A person with a mailbox on the test dovecot: reads it over IMAP like a mail client,
writes and answers mail (quoting the original, as phone clients do)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import email.utils
import imaplib
import time
from email.message import EmailMessage, Message
from email.utils import make_msgid

from tests.email.servers import PASSWORD, Dovecot, stamp


def parse(raw: bytes) -> EmailMessage:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def body_text(msg: Message) -> str:
    assert isinstance(msg, EmailMessage)
    part = msg.get_body(preferencelist=("plain",))
    text = part.get_content() if part is not None else ""
    return str(text).replace("\r\n", "\n")


def from_of(msg: EmailMessage) -> tuple[str, str]:
    """(display name, address) of From."""
    address = msg["From"].addresses[0]
    return address.display_name, address.addr_spec


class Person:
    """Someone with a mailbox on the test dovecot: reads it over IMAP, sends over SMTP."""

    def __init__(self, address: str, dovecot: Dovecot, smtp_port: int) -> None:
        self.address = address
        self.dovecot = dovecot
        self.smtp_port = smtp_port

    def _inbox(self) -> list[EmailMessage]:
        with imaplib.IMAP4("127.0.0.1", self.dovecot.imap) as imap:
            imap.login(self.address, PASSWORD)
            imap.select("INBOX", readonly=True)
            _, data = imap.uid("SEARCH", "ALL")
            out = []
            for uid in data[0].split():
                _, parts = imap.uid("FETCH", uid, "(BODY.PEEK[])")
                raw = parts[0][1]
                assert isinstance(raw, bytes)
                out.append(parse(raw))
            return out

    async def inbox(self) -> list[EmailMessage]:
        return await asyncio.to_thread(self._inbox)

    async def wait_mail(
        self, count: int = 1, timeout: float = 15.0, match: str = ""
    ) -> list[EmailMessage]:
        """Wait until the mailbox holds `count` mails whose subject or text has `match`."""
        deadline = time.monotonic() + timeout
        while True:
            mails = [
                m
                for m in await self.inbox()
                if match in str(m["Subject"] or "") or match in body_text(m)
            ]
            if len(mails) >= count:
                return mails
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.address}: {len(mails)} of {count} mails {match!r}")
            await asyncio.sleep(0.1)

    def _flags(self) -> dict[int, str]:
        with imaplib.IMAP4("127.0.0.1", self.dovecot.imap) as imap:
            imap.login(self.address, PASSWORD)
            imap.select("INBOX", readonly=True)
            _, data = imap.uid("FETCH", "1:*", "(FLAGS)")
            out = {}
            for item in data:
                if isinstance(item, bytes) and b"UID" in item:
                    words = item.replace(b"(", b" ").replace(b")", b" ").split()
                    out[int(words[words.index(b"UID") + 1])] = item.decode()
            return out

    async def flags(self) -> dict[int, str]:
        """UID -> the FETCH FLAGS line, for every mail in the mailbox."""
        return await asyncio.to_thread(self._flags)

    def _store(self, uid: int, op: str, flag: str) -> None:
        with imaplib.IMAP4("127.0.0.1", self.dovecot.imap) as imap:
            imap.login(self.address, PASSWORD)
            imap.select("INBOX")
            imap.uid("STORE", str(uid), op, flag)

    async def set_flag(self, uid: int, flag: str, on: bool = True) -> None:
        await asyncio.to_thread(self._store, uid, "+FLAGS" if on else "-FLAGS", flag)

    def compose(
        self,
        to: str,
        subject: str,
        text: str,
        *,
        reply_to: EmailMessage | None = None,
        headers: dict[str, str] | None = None,
    ) -> EmailMessage:
        msg = EmailMessage()
        msg["From"] = f"{self.address.split('@')[0].title()} <{self.address}>"
        msg["To"] = to
        msg["Subject"] = subject
        msg["Message-ID"] = make_msgid(domain="person.test")
        msg["Date"] = email.utils.formatdate()
        if reply_to is not None:
            parent = reply_to["Message-ID"]
            msg["In-Reply-To"] = parent
            msg["References"] = " ".join(filter(None, [reply_to["References"], parent]))
        for name, value in (headers or {}).items():
            msg[name] = value
        msg.set_content(text)
        return msg

    def reply_quoting(self, original: EmailMessage, answer: str, to: str) -> EmailMessage:
        """A reply as a phone client writes it: the answer on top, the original quoted."""
        quoted = "\n".join("> " + line for line in body_text(original).splitlines())
        text = f"{answer}\n\nOn Mon, 1 Jan 2024 at 10:00, {original['From']} wrote:\n{quoted}\n"
        subject = str(original["Subject"])
        return self.compose(
            to, subject if subject.startswith("Re:") else f"Re: {subject}", text, reply_to=original
        )

    async def send(self, msg: EmailMessage, envelope_from: str | None = None) -> None:
        """Hand the mail to the bot's receiving MX (`stamp`), which delivers it into
        dovecot over LMTP."""
        rcpts = [a.strip() for a in str(msg["To"]).split(",")]
        sender = self.address if envelope_from is None else envelope_from
        await self.send_raw(bytes(msg), rcpts, sender)

    async def send_raw(self, data: bytes, rcpts: list[str], envelope_from: str) -> None:
        """Bytes exactly as written (a forger's headers too), through the receiving MX."""
        stamped = stamp(data, envelope_from)
        await asyncio.to_thread(self.dovecot.deliver, envelope_from, rcpts, stamped)
