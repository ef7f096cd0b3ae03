"""Raw mail bytes -> `ParsedMail`: the protocol half of inbound email.

Headers are read leniently (the compat32 policy keeps raw strings; `headers.py`
decodes them: raw UTF-8, RFC 2047, RFC 2231), the author comes from the raw From
header (`sender.py`: refused when unclear), and the Received / Authentication-Results
trace is kept raw for `auth.py`. The body prefers text/plain, else HTML converted to
text (bot.core.html_text, bounded). Quoted history and signatures are stripped by
`reply.strip_reply`, attachments are kept with their decoded bytes, and the text
handed on is capped. Nothing here raises: a broken mail becomes a mail with less in
it. Blocking: the channel runs it in a worker thread.
"""

from __future__ import annotations

import email
import email.parser
import email.policy
import hashlib
import itertools
import re
from dataclasses import dataclass, field
from email.message import Message
from email.utils import getaddresses

from bot.seam import html_to_text
from channels.email.headers import filename, header_text, raw_values
from channels.email.machine import MACHINE_HEADERS
from channels.email.reply import strip_reply
from channels.email.sender import author

_MSGID = re.compile(r"<[^<>\s]+>")
PART_TYPES_LIMIT = 200  # parts whose content types are kept for machine.py
MAX_BOUNDARIES = 500  # more multipart boundaries than that: read the headers only
MAX_PARTS = 500  # more part headers than that: parse the mail up to the 500th
MAX_RECIPIENTS = 50  # addresses of To and Cc kept
MAX_ADDRESS_CHARS = 4_000  # of one To or Cc header read
_ENCODED = re.compile(r"=\?[^?]*\?[qQbB]\?")


@dataclass(slots=True)
class Attachment:
    name: str
    size: int
    content_type: str
    data: bytes = field(default=b"", repr=False)  # the decoded content

    def describe(self) -> str:
        return f"{self.name} ({_size(self.size)}, {self.content_type})"


@dataclass(slots=True)
class ParsedMail:
    message_id: str
    subject: str = ""
    sender: str = ""  # lower-cased address of From, "" when there is none
    sender_name: str = ""
    sender_refused: str = ""  # why From names no one to believe ("" when it does)
    #: the Received and Authentication-Results headers, top first, raw
    trace: list[tuple[str, str]] = field(default_factory=list)
    in_reply_to: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    #: the lower-cased addresses of To and Cc (a thread's first mail names its people)
    recipients: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    text: str = ""  # the new part of the mail: quotes and signature stripped, capped
    #: the body as read, quotes and all (bounded): read again against a mail of ours it
    #: quotes, for answers typed inside that quote (inside.py)
    body: str = field(default="", repr=False)
    part_types: list[str] = field(default_factory=list)  # content types of the parts
    attachments: list[Attachment] = field(default_factory=list)
    cut: bool = False
    size: int = 0

    @property
    def thread_refs(self) -> list[str]:
        """Every message this mail answers: In-Reply-To, then References."""
        return list(dict.fromkeys([*self.in_reply_to, *self.references]))

    @property
    def root(self) -> str:
        """The first message of the thread: the conversation's key."""
        if self.references:
            return self.references[0]
        if self.in_reply_to:
            return self.in_reply_to[0]
        return self.message_id


def parse_mail(raw: bytes, max_chars: int, full_size: int | None = None) -> ParsedMail:
    """Parse `raw` (maybe only the first part of a mail of `full_size` bytes)."""
    msg, parts_cut = _message(raw)
    mail = ParsedMail(message_id=_message_id(msg, raw), size=full_size or len(raw))
    mail.subject = header_text(msg, "subject")
    who = author(msg)
    mail.sender, mail.sender_name, mail.sender_refused = who.address, who.name, who.refused
    mail.trace = _trace(msg)
    mail.in_reply_to = _ids(msg, "in-reply-to")[:1]
    mail.references = _ids(msg, "references")
    mail.recipients = _recipients(msg)
    mail.headers = {name: header_text(msg, name) for name in MACHINE_HEADERS if name in msg}
    body, mail.attachments = _body(msg)
    mail.part_types = _part_types(msg)
    mail.cut = parts_cut or (full_size is not None and full_size > len(raw))
    # bound the work the reply parser's regexes do, then the text handed on
    if len(body) > max_chars * 2:
        body, mail.cut = body[: max_chars * 2], True
    mail.body = body
    text = strip_reply(body)
    if len(text) > max_chars:
        text, mail.cut = text[:max_chars], True
    mail.text = text
    return mail


def _bounded(raw: bytes) -> tuple[bytes, bool]:
    """`raw` up to its MAX_PARTS-th part header, and whether it was cut there: the
    stdlib parser's time grows with the parts (3,000 of them in 3 MB cost 100 ms), and
    no client sends hundreds. A mail with a few large attachments stays whole."""
    lowered = raw.lower()
    if lowered.count(b"\ncontent-type:") <= MAX_PARTS:
        return raw, False
    end = 0
    for _ in range(MAX_PARTS):
        end = lowered.find(b"\ncontent-type:", end + 1)
    return raw[:end], True


def _message(raw: bytes) -> tuple[Message, bool]:
    """The stdlib's parse, and whether it read only part of the mail: headers only for a
    mail nested deeper than any client nests (the parser recurses once per level:
    thousands of levels cost a second, then fail), else up to MAX_PARTS parts."""
    deep = raw.count(b"boundary=") + raw.count(b"BOUNDARY=") > MAX_BOUNDARIES
    read, cut = (raw, True) if deep else _bounded(raw)
    try:
        parser = email.parser.BytesParser(policy=email.policy.compat32)
        return parser.parsebytes(read, headersonly=deep), cut
    except Exception:  # the stdlib parser is lenient; this is belt and braces
        return Message(), cut


def _trace(msg: Message) -> list[tuple[str, str]]:
    try:
        items = [(k.lower(), str(v)) for k, v in msg.raw_items()]
    except Exception:
        return []
    return [(k, v) for k, v in items if k in ("received", "authentication-results")]


def _message_id(msg: Message, raw: bytes) -> str:
    ids = _ids(msg, "message-id")
    if ids:
        return ids[0]
    # stable across restarts, so the journal still deduplicates it
    return f"<{hashlib.sha256(raw).hexdigest()[:32]}@no-message-id.invalid>"


def _ids(msg: Message, name: str) -> list[str]:
    found: list[str] = []
    for value in raw_values(msg, name):
        found.extend(_MSGID.findall(value))
    return list(dict.fromkeys(found))


def _recipients(msg: Message) -> list[str]:
    """Every address of To and Cc, bounded (an address inside an encoded word is display
    text and names nobody)."""
    values = [v[:MAX_ADDRESS_CHARS] for name in ("to", "cc") for v in raw_values(msg, name)]
    try:
        pairs = getaddresses(values)
    except Exception:  # the stdlib is lenient; a pathological header names nobody
        return []
    found = [addr.lower() for _, addr in pairs if "@" in addr and not _ENCODED.search(addr)]
    return list(dict.fromkeys(found))[:MAX_RECIPIENTS]


def _body(msg: Message) -> tuple[str, list[Attachment]]:
    plain: str | None = None
    html: str | None = None
    attachments: list[Attachment] = []
    for part in _parts(msg):
        kind = _content_type(part)
        if _is_attachment(part):
            attachments.append(_attachment(part, kind))
        elif kind == "text/plain" and plain is None:
            plain = _decode(part)
        elif kind == "text/html" and html is None:
            html = _decode(part)
    if plain is not None and plain.strip():
        return plain, attachments
    if html is not None:
        return html_to_text(html), attachments
    return plain or "", attachments


def _part_types(msg: Message) -> list[str]:
    """The content types of every part, containers included (bounded: a report's
    parts sit near the top)."""
    try:
        parts = itertools.islice(msg.walk(), PART_TYPES_LIMIT)
        return list(dict.fromkeys(_content_type(p) for p in parts))
    except Exception:
        return []


def _parts(msg: Message) -> list[Message]:
    try:
        return [p for p in msg.walk() if not p.is_multipart()]
    except Exception:  # a pathological structure: read the top level only
        return [msg] if not isinstance(msg.get_payload(), list) else []


def _content_type(part: Message) -> str:
    try:
        return part.get_content_type()
    except Exception:
        return "application/octet-stream"


def _is_attachment(part: Message) -> bool:
    try:
        disposition = str(part.get("content-disposition", "")).split(";")[0].strip().lower()
        return disposition == "attachment" or bool(filename(part))
    except Exception:
        return False


def _attachment(part: Message, kind: str) -> Attachment:
    name = filename(part)
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    data = payload if isinstance(payload, bytes) else b""
    return Attachment(" ".join(name.split()) or "(unnamed)", len(data), kind, data)


def _decode(part: Message) -> str:
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    charset = "utf-8"
    try:
        charset = part.get_content_charset() or "utf-8"
        return payload.decode(charset, errors="replace")
    except (LookupError, ValueError, TypeError):  # an unknown or bogus charset name
        return payload.decode("utf-8", errors="replace")


def _size(n: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
