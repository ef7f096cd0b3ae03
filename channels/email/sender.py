"""Who a mail says it is from: the From address read from the raw header (RFC 5322).

Encoded words (RFC 2047) are display text and are decoded only inside the display
name, after the address is parsed: `=?utf-8?q?ann=40example.com?= <m@evil.test>` is
m@evil.test. The header is parsed by the standard library's RFC 5322 parser
(email.headerregistry); a mail whose author is ambiguous is refused rather than
guessed: no From or several From headers, several mailboxes or a group, a header the
parser had to repair (anything but obsolete syntax), an address without a domain, or
a Sender header naming someone else. The domain must be a host name (no literal,
nothing an encoded word could hide in). Pure functions of a parsed `Message`.
"""

from __future__ import annotations

import email.policy
import re
from dataclasses import dataclass
from email import errors
from email.message import Message

from channels.email.headers import raw_values

_ADDRESS = email.policy.default.header_factory
#: one mailbox never needs more (RFC 5322 lines stop at 998); the parser is slow on more
MAX_FROM = 998
#: a host name: dot-separated labels of letters (any script: IDN), digits and hyphens
#: defects that touch only how an encoded word of the display name decodes (text to show,
#: never the address) or obsolete syntax: a person's client writes them, no forger gains
HARMLESS = (
    errors.ObsoleteHeaderDefect,
    errors.InvalidBase64PaddingDefect,
    errors.InvalidBase64CharactersDefect,
    errors.InvalidBase64LengthDefect,
)
#: an RFC 2047 encoded word: display text only, never part of an address
_ENCODED = re.compile(r"=\?[^?]*\?[qQbB]\?[^?]*\?=")
_HOST = re.compile(r"(?:[^\W_](?:[\w-]*[^\W_])?\.)*[^\W_](?:[\w-]*[^\W_])?")


@dataclass(frozen=True, slots=True)
class From:
    """The author of a mail, or why there is none to believe (`refused`)."""

    address: str = ""  # lower-cased addr-spec, "" when refused
    name: str = ""  # the display name, decoded: text to show, never an address
    refused: str = ""

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2]


def author(msg: Message) -> From:
    """The one mailbox of the From header, checked against Sender."""
    values = raw_values(msg, "from")
    if len(values) != 1:
        return From(refused="no From header" if not values else "several From headers")
    found = mailbox(values[0])
    if found.refused:
        return found
    senders = raw_values(msg, "sender")
    if senders and any(mailbox(v).address != found.address for v in senders):
        return From(refused="a Sender header names someone other than From")
    return found


def mailbox(value: str) -> From:
    """The single mailbox of one address header's raw value, or a refusal."""
    if len(value) > MAX_FROM:
        return From(refused=f"From is over {MAX_FROM} characters")
    try:
        header = _ADDRESS("from", value)
        groups, defects = header.groups, header.defects
    except Exception as exc:  # the parser gave up: nothing to believe
        return From(refused=f"From cannot be parsed ({type(exc).__name__})")
    if any(not isinstance(d, HARMLESS) for d in defects):
        return From(refused="From is malformed")
    boxes = [a for g in groups for a in g.addresses]
    if len(boxes) != 1 or groups[0].display_name is not None:
        return From(refused="From names no single mailbox")
    box = boxes[0]
    if not box.username or not _HOST.fullmatch(box.domain):
        return From(refused="From has no address with a host name for its domain")
    if not written_out(box.addr_spec, value):
        return From(refused="From's address is (partly) inside an encoded word")
    # addr_spec keeps a quoted local part quoted: "ann@example.com"@evil.test stays whole
    return From(box.addr_spec.lower(), " ".join(box.display_name.split()))


def written_out(addr_spec: str, value: str) -> bool:
    """Whether the address stands in the raw header outside every encoded word (the
    parser decodes an encoded word glued to an atom into the address itself)."""
    bare = _ENCODED.sub(" ", value).replace('"', "").replace("\\", "").lower()
    return addr_spec.replace('"', "").lower() in bare
