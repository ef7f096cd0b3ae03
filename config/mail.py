"""Whose word the email channel takes for a mail's sender: EMAIL_AUTHSERV_ID (the
receiving server whose Authentication-Results count), EMAIL_AUTHSERV_HOPS (how far
down the mail those may sit) and EMAIL_UNVERIFIED (what mail nobody verified is).

Unverified mail never decides anything, so email does not start without an
authserv-id unless the operator says `EMAIL_UNVERIFIED=accept`. Where IMAP_HOST names
a provider whose receiving servers are known, the authserv-id is filled in: Gmail's
`mx.google.com`, Microsoft 365's `-` (its headers name no server). Those providers
stamp every mail they take in, so their own Received headers above it are not counted
(`any`); anyone else's header counts only above the first Received header their
servers did not add. Imports nothing of the project outside `config/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from config.sources import FieldProblem

if TYPE_CHECKING:
    from config.settings import Settings

#: EMAIL_AUTHSERV_HOPS: how many Received headers (beyond the mailbox's own LMTP
#: delivery) sit above your server's Authentication-Results; `any` for a provider
Hops = int | Literal["any"]
#: IMAP_HOST -> the authserv-id of that provider's receiving servers (a leading dot:
#: any host of that domain)
PROVIDERS: tuple[tuple[str, str], ...] = (
    ("imap.gmail.com", "mx.google.com"),
    ("imap.googlemail.com", "mx.google.com"),
    ("outlook.office365.com", "-"),
    (".outlook.com", "-"),
)
REQUIRED = (
    "is required when EMAIL_ADDRESS is set: the authserv-id of the Authentication-Results "
    'your mail server adds (docs/security.md, "Setting EMAIL_AUTHSERV_ID"); or set '
    "EMAIL_UNVERIFIED=accept to take mail nobody verified, as from unlisted senders"
)


def provider_id(imap_host: str | None) -> str | None:
    """The authserv-id of a known provider's receiving servers, from its IMAP host."""
    host = (imap_host or "").strip().lower().rstrip(".")
    for name, authserv_id in PROVIDERS:
        if host == name or (name.startswith(".") and host.endswith(name)):
            return authserv_id
    return None


def hops(value: Any) -> Any:
    """EMAIL_AUTHSERV_HOPS as given: a whole number from 0, or `any`."""
    if value is None or value == "any" or (isinstance(value, int) and value >= 0):
        return value
    text = str(value).strip().lower()
    if text == "any" or text.isdigit():
        return text if text == "any" else int(text)
    raise ValueError("must be 0, 1, 2 ... (Received headers your servers add) or any")


def settle(s: Settings) -> None:
    """Fill in what the IMAP host tells, then refuse email nobody would verify."""
    if not s.email_address:
        return
    known = provider_id(s.imap_host)
    if s.email_authserv_id is None and known is not None:
        s.email_authserv_id = known
    if s.email_authserv_hops is None:
        stamped = known is not None and s.email_authserv_id == known
        s.email_authserv_hops = "any" if stamped else 0
    if s.email_authserv_id is None and s.email_unverified != "accept":
        raise FieldProblem("email_authserv_id", REQUIRED)
