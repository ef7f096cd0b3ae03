"""Outbound mail: an agent's markdown -> a MIME message that threads and shows who speaks.

multipart/alternative (the markdown as plain text, and HTML rendered from it), our
own Message-ID (derived from the outbox id with a key of ours, so a resend after a
crash carries the same id and nobody who sees the outbox id in an event can tell it),
In-Reply-To and the full References chain, the thread's subject with one "Re:" (an
approval request's secret code `[#…]` after it), and a From display name naming the
agent. Auto-Submitted and X-Loop mark it as a bot's mail, so RFC 3834 responders do
not answer it and it is known if it comes back. Pure: the threading facts are handed in.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import re
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formataddr, formatdate

import markdown

from bot.seam import APPROVAL_CODE, Outbound, code
from channels.email.safety import LOOP_HEADER

_RE = re.compile(r"^\s*((re|aw|sv|antw)\s*:\s*)+", re.IGNORECASE)
MAX_REFERENCES = 20  # keep the header sane in very long threads: the root and the latest


@dataclass(slots=True)
class Thread:
    """What we keep per email conversation to answer inside it, and who is part of it
    (channels/email/threads.py)."""

    subject: str
    refs: list[str] = field(default_factory=list)  # oldest first; the last is the latest
    cut: bool = False  # the person's last mail was cut: say so in the next answer
    #: the addresses of its first mail (From, To, Cc; for our own, its recipient)
    participants: list[str] = field(default_factory=list)

    def add(self, message_id: str) -> None:
        if message_id not in self.refs:
            self.refs.append(message_id)


def reply_subject(subject: str) -> str:
    base = _RE.sub("", subject).strip()
    return f"Re: {base}" if base else "Re: your message"


def speaker(agent: str) -> str:
    """The From display name: who speaks."""
    if agent.lower() in ("switchboard", ""):
        return "Switchboard"
    return f"{agent[:1].upper()}{agent[1:]} (Switchboard)"


def message_id_for(msg: Outbound, own_address: str, key: bytes) -> str:
    domain = own_address.rsplit("@", 1)[-1] or "switchboard.invalid"
    local = hmac.new(key, msg.id.encode(), hashlib.sha256).hexdigest()[:32]
    return f"<{local}@{domain}>"


def new_subject(msg: Outbound) -> str:
    subject = str(msg.meta.get("subject") or "")
    if not subject:
        subject = f"Message from {speaker(msg.agent)}"
    first = " ".join(subject.split())
    return first if len(first) <= 120 else first[:117] + "..."


def compose(
    msg: Outbound, own_address: str, to: str, thread: Thread | None, footer: str = "",
    *, key: bytes,
) -> EmailMessage:  # fmt: skip
    mail = EmailMessage()
    mail["From"] = formataddr((speaker(msg.agent), own_address))
    mail["To"] = to
    mail["Date"] = formatdate(localtime=False)
    mail["Message-ID"] = message_id_for(msg, own_address, key)
    if thread is not None:
        mail["Subject"] = reply_subject(thread.subject)
        if thread.refs:
            mail["In-Reply-To"] = thread.refs[-1]
            mail["References"] = " ".join(_trim(thread.refs))
    else:
        mail["Subject"] = new_subject(msg)
    if msg.meta.get(APPROVAL_CODE):
        # an approval request: its code in the subject, which a reply must keep
        mail.replace_header("Subject", f"{mail['Subject']} {code(str(msg.meta[APPROVAL_CODE]))}")
    mail["Auto-Submitted"] = "auto-replied" if thread is not None else "auto-generated"
    mail[LOOP_HEADER] = own_address
    text = msg.text + (f"\n\n{footer}" if footer else "")
    mail.set_content(text)
    mail.add_alternative(render_html(text), subtype="html")
    return mail


def render_html(text: str) -> str:
    try:
        md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
        # raw HTML in an agent's text (perhaps echoed from a mail) is shown, not rendered
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        body = md.convert(text)
    except Exception:  # markdown never should; the plain text is still there
        body = f"<pre>{html.escape(text)}</pre>"
    return f"<!DOCTYPE html>\n<html><body>\n{body}\n</body></html>\n"


def _trim(refs: list[str]) -> list[str]:
    if len(refs) <= MAX_REFERENCES:
        return refs
    return [refs[0], *refs[-(MAX_REFERENCES - 1) :]]
