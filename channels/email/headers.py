"""Header text as people wrote it: raw UTF-8 (RFC 6532), encoded words (RFC 2047) and
RFC 2231 parameters decoded to one clean line.

The stdlib's compat32 policy keeps 8-bit header bytes as surrogate escapes; read as
they are they turn "Grüße" into replacement characters. Here the raw value is taken
back to its bytes and read as UTF-8 (Latin-1 when it is not UTF-8), and only then are
encoded words decoded. Pure functions of a parsed `Message`; nothing here raises.
"""

from __future__ import annotations

import email.policy
from email.message import Message
from email.utils import collapse_rfc2231_value

_UNSTRUCTURED = email.policy.default.header_factory
#: characters of a header decoded: the stdlib's decoder takes seconds on a long run of
#: encoded words, and no subject or file name people write is this long
MAX_HEADER = 2_000


def raw_values(msg: Message, name: str) -> list[str]:
    """Every `name` header of `msg`, top first, as text but not decoded (RFC 2047 words
    stay as they are): what an address or Authentication-Results parser must read."""
    try:
        return [unescape(str(v)) for k, v in msg.raw_items() if k.lower() == name.lower()]
    except Exception:  # a pathological header list
        return []


def unescape(value: str) -> str:
    """A compat32 header string with its 8-bit bytes read as UTF-8 (else Latin-1)."""
    try:
        data = value.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:
        return value  # already text (a str with real non-ASCII characters)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def decoded(value: str) -> str:
    """An unstructured header (a subject, a file name) with encoded words decoded, on
    one line, cut at MAX_HEADER characters; the undecoded text when the decoder fails."""
    text = unescape(value[: MAX_HEADER * 2])[:MAX_HEADER]
    try:
        text = str(_UNSTRUCTURED("subject", text))
    except Exception:
        pass
    return " ".join(text.split())


def header_text(msg: Message, name: str) -> str:
    """The first `name` header, decoded to one line; "" when there is none."""
    values = raw_values(msg, name)
    return decoded(values[0]) if values else ""


def filename(part: Message) -> str:
    """A MIME part's file name: Content-Disposition's, else Content-Type's `name`,
    RFC 2231 parameters joined and decoded, raw UTF-8 and encoded words read; "" for none."""
    for header, param in (("content-disposition", "filename"), ("content-type", "name")):
        value = _param(part, header, param)
        if value:
            return value
    return ""


def _param(part: Message, header: str, param: str) -> str:
    values = raw_values(part, header)
    if not values:
        return ""
    holder = Message()  # the stdlib's parameter parser, fed the header already read as UTF-8
    holder[header] = values[0]
    try:
        value = holder.get_param(param, None, header)
        return decoded(collapse_rfc2231_value(value)) if value is not None else ""
    except Exception:
        return ""
