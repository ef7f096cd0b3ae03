"""Whether the receiving mail server verified a mail's From domain (RFC 8601, RFC 7489).

Only `Authentication-Results` headers the bot's own server wrote count: those whose
authserv-id is EMAIL_AUTHSERV_ID, above the first `Received` header its servers did not
add, and above any header carrying another authserv-id. A server adds its header above
its own `Received` (Postfix with OpenDMARC, rspamd) and the mailbox's LMTP delivery
adds one more on top (`with LMTP`, RFC 3848): those are skipped; any other `Received`
above the header is counted, and past EMAIL_AUTHSERV_HOPS of them (default 0) the
header sits where a sender or an unstamped path could have written it (a mail that
reached the mailbox without the server's check). Gmail and Microsoft 365 stamp every
mail they take in, below a varying number of their own `Received`: for them any number
counts (None). Of the headers that count, the topmost result of each method counts.
The From domain is verified by `dmarc=pass`, or by `dkim=pass` whose signing domain
(`header.d`) or `spf=pass` whose `smtp.mailfrom` domain is aligned with it: the same
organizational domain (relaxed alignment, the Public Suffix List). EMAIL_AUTHSERV_ID
may list several ids, and `-` stands for headers that name none (Microsoft 365). Pure
functions of the raw header list.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from publicsuffixlist import PublicSuffixList

_COMMENT = re.compile(r"\([^()]*\)")
_PROPERTY = re.compile(r'([a-z0-9_-]+\.[a-z0-9_-]+)\s*=\s*("[^"]*"|[^\s;]+)', re.IGNORECASE)
_RESULT = re.compile(r"^\s*([a-z0-9_-]+)\s*=\s*([a-z]+)", re.IGNORECASE)
METHODS = ("dmarc", "dkim", "spf")
MAX_VALUE = 4_000  # characters of one header read (comments are peeled one level a pass)
MAX_HEADERS = 20  # of our server's headers read
#: a mailbox's final delivery hop (dovecot, Cyrus): `by imap.example.com with LMTP`,
#: as the by and with clauses together (a HELO name in the from clause is one word)
_DELIVERY = re.compile(r"\bby\s+[^\s;()]+\s+(?:\([^()]*\)\s+)?with\s+LMTPS?A?\b", re.IGNORECASE)
#: EMAIL_AUTHSERV_ID for a server whose headers name no authserv-id (Microsoft 365)
NO_ID = "-"


@dataclass(slots=True)
class Result:
    method: str
    result: str
    props: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Header:
    authserv_id: str
    results: list[Result]


def parse(value: str) -> Header:
    """One Authentication-Results value: its authserv-id and its method results. A
    header that starts with a result names no server (Microsoft 365 writes them so):
    its authserv-id is NO_ID."""
    text = " ".join(value[:MAX_VALUE].split())
    for _ in range(8):  # nested comments, innermost first; deeper is not a real header
        text, found = _COMMENT.subn(" ", text)
        if not found:
            break
    head, *resinfo = text.split(";")
    if _RESULT.match(head):
        head, resinfo = NO_ID, [head, *resinfo]
    words = head.split()
    results = [r for part in resinfo if (r := _result(part)) is not None]
    return Header(words[0].lower() if words else "", results)


def _result(part: str) -> Result | None:
    match = _RESULT.match(part)
    if match is None:
        return None
    props = {k.lower(): v.strip('"').lower() for k, v in _PROPERTY.findall(part[match.end() :])}
    return Result(match.group(1).lower(), match.group(2).lower(), props)


def trusted(
    headers: Iterable[tuple[str, str]], authserv_id: str, hops: int | None = 0
) -> list[Header]:
    """The Authentication-Results headers our server wrote, top first, from the raw
    (name, value) list of the mail, top first. `authserv_id` may list several ids
    (comma-separated: a provider whose MX hosts each name themselves); `hops`: how many
    `Received` headers besides the LMTP delivery's may sit above them (None: any)."""
    ids = _ids(authserv_id)
    ours: list[Header] = []
    above = _Above(hops)
    for name, value in headers:
        name = name.lower()
        if name == "received":
            if ours or not above.passes(value):
                break  # below: written by an earlier hop, or by the sender
            continue
        if name != "authentication-results":
            continue
        header = parse(value)
        if header.authserv_id not in ids:
            break  # a foreign one: what is below it the sender could have written
        ours.append(header)
        if len(ours) == MAX_HEADERS:
            break
    return ours


def depth(headers: Iterable[tuple[str, str]], authserv_id: str) -> int | None:
    """How many `Received` headers (the LMTP delivery's aside) sit above the first
    header naming `authserv_id`; None when there is none: what a refusal tells the
    operator about EMAIL_AUTHSERV_HOPS."""
    ids = _ids(authserv_id)
    above = _Above(None)
    for name, value in headers:
        name = name.lower()
        if name == "received":
            above.passes(value)
        elif name == "authentication-results" and parse(value).authserv_id in ids:
            return above.counted
    return None


class _Above:
    """The `Received` headers above our server's results: the LMTP deliveries at the top
    are the mailbox's own; past `limit` others, nothing below counts."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.counted = 0

    def passes(self, received: str) -> bool:
        if self.counted == 0 and _DELIVERY.search(received[:MAX_VALUE]):
            return True
        self.counted += 1
        return self.limit is None or self.counted <= self.limit


def _ids(authserv_id: str) -> set[str]:
    return {part.strip().lower() for part in authserv_id.split(",") if part.strip()}


def verified(headers: list[Header], from_domain: str) -> str | None:
    """None when the From domain is verified, else why not (for the log)."""
    if not headers:
        return "no Authentication-Results from EMAIL_AUTHSERV_ID"
    first = _topmost(headers)
    checks = (("dmarc", "header.from"), ("dkim", "header.d"), ("dkim", "header.i"),
              ("spf", "smtp.mailfrom"))  # fmt: skip
    if any(_passes(first.get(method), prop, from_domain) for method, prop in checks):
        return None
    shown = ", ".join(f"{m}={r.result}" for m, r in first.items()) or "no results"
    return f"From domain {from_domain} not verified ({shown})"


def _topmost(headers: list[Header]) -> dict[str, Result]:
    first: dict[str, Result] = {}
    for header in headers:
        for result in header.results:
            if result.method in METHODS:
                first.setdefault(result.method, result)
    return first


def _passes(result: Result | None, prop: str, from_domain: str) -> bool:
    """A pass naming the domain it verified (`prop`), that domain aligned with From's.
    DMARC's own verdict is about the From domain itself: `header.from`, when given,
    must be it (the mail has one From, so a DMARC pass without it is about that one)."""
    if result is None or result.result != "pass":
        return False
    if prop == "header.from":
        return result.props.get(prop, from_domain.lower()) == from_domain.lower()
    if prop not in result.props:
        return False
    return aligned(result.props[prop].rpartition("@")[2], from_domain)


def aligned(domain: str, from_domain: str) -> bool:
    """Relaxed alignment (RFC 7489 3.1): the same organizational domain."""
    a, b = domain.lower().rstrip("."), from_domain.lower().rstrip(".")
    return bool(a) and org_domain(a) == org_domain(b)


def org_domain(domain: str) -> str:
    return _psl().privatesuffix(domain) or domain


@functools.cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()
