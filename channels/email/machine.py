"""Machine mail: bounces, auto-replies, reports and list mail that no one should answer.

`machine_reason` reads a parsed mail's sender and the raw headers parse.py keeps
(`MACHINE_HEADERS`) and names why the mail came from a machine, or returns None.
Pure functions of a parsed mail; safety.py decides what to do with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from channels.email.parse import ParsedMail

#: the headers machine-mail detection reads, kept raw and lower-cased by name
MACHINE_HEADERS = (
    "auto-submitted",
    "precedence",
    "list-id",
    "list-unsubscribe",
    "return-path",
    "x-loop",
    "x-autoreply",
    "x-autorespond",
    "content-type",
)
BOUNCE_LOCALPARTS = ("mailer-daemon", "mail-daemon", "postmaster-noreply", "bounce", "bounces")
BULK_PRECEDENCE = ("bulk", "list", "junk", "auto_reply")


def machine_reason(mail: ParsedMail, own_address: str) -> str | None:
    """Why this mail is machine mail that no one should answer, or None."""
    h = mail.headers
    if mail.sender == own_address:
        return "own address"
    if own_address in h.get("x-loop", "").lower():
        return "loop: our own mail came back"
    if _is_bounce(mail):
        return "bounce"
    if h.get("auto-submitted", "no").split(";")[0].strip().lower() != "no":
        return "auto-submitted"
    if any(name in h for name in ("x-autoreply", "x-autorespond")):
        return "auto-reply"
    if h.get("precedence", "").strip().lower() in BULK_PRECEDENCE:
        return "bulk/list precedence"
    if "list-id" in h or "list-unsubscribe" in h:
        return "mailing list"
    return None


def _is_bounce(mail: ParsedMail) -> bool:
    if h := mail.headers.get("return-path"):
        if h.strip() in ("<>", ""):
            return True
    if not mail.sender:
        return True  # no usable From: a null sender
    local = mail.sender.split("@", 1)[0]
    if local in BOUNCE_LOCALPARTS:
        return True
    kind = mail.headers.get("content-type", "").lower()
    return "multipart/report" in kind and "delivery-status" in kind
