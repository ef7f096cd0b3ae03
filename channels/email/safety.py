"""Who may talk to the bot by email, and which mail must never be answered.

Email is open to the whole world, so the allow-list is deny-by-default
(EMAIL_ALLOWED_SENDERS: addresses and `@domain`s). Machine mail is never answered
(machine.py names why: bounces, auto-replies, reports, list mail, our own mail),
nor a sender who suddenly sends more than a person would (a loop with a responder
that marks nothing). A From that names no single mailbox is refused, and so is mail
whose From domain the receiving server did not verify (channels/email/auth.py),
unless the operator takes it (EMAIL_UNVERIFIED=accept): then it passes as unverified,
which the core treats as an unlisted sender who decides nothing. `check` returns the
reason to refuse, or why the sender is unverified. Pure functions of a parsed mail,
plus one small in-memory rate window.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from dataclasses import dataclass

from channels.email import auth
from channels.email.machine import machine_reason
from channels.email.parse import ParsedMail

#: our outgoing mail carries `X-Loop: <our address>` (RFC 3834-style loop marker)
LOOP_HEADER = "X-Loop"
#: how an unverified sender's id starts (`unverified:ann@example.com`): never a listed
#: person's id, so nothing resolves it to one
UNVERIFIED_ID = "unverified:"
WINDOW_SECONDS = 3600.0
#: senders held before those silent for a whole window are forgotten (RateGuard)
MAX_SENDERS = 10_000


def allowed(sender: str, allow: list[str]) -> bool:
    """An exact address, or `@domain` for every address of exactly that domain."""
    if not sender or "@" not in sender:
        return False
    domain = "@" + sender.rsplit("@", 1)[1]
    return sender in allow or domain in allow


class RateGuard:
    """Refuse a sender past `limit` accepted mails in the last hour: the last defence
    against a reply loop with a responder that sets none of the headers above."""

    def __init__(self, limit: int, window: float = WINDOW_SECONDS) -> None:
        self.limit = limit
        self.window = window
        self._seen: dict[str, deque[tuple[float, str]]] = defaultdict(deque)

    def admit(self, sender: str, message_id: str = "", now: float | None = None) -> bool:
        """Count one mail; the same Message-ID read again (after a restart, a reconnect)
        is the same mail and counts once."""
        now = time.monotonic() if now is None else now
        if sender not in self._seen and len(self._seen) >= MAX_SENDERS:
            self._forget_silent(now)
        times = self._seen[sender]
        while times and now - times[0][0] > self.window:
            times.popleft()
        if message_id and any(seen == message_id for _, seen in times):
            return True
        if len(times) >= self.limit:
            return False
        times.append((now, message_id))
        return True

    def _forget_silent(self, now: float) -> None:
        """Bounded: senders with no mail inside the window count nothing; drop them."""
        for sender in [s for s, t in self._seen.items() if not t or now - t[-1][0] > self.window]:
            del self._seen[sender]


@dataclass(frozen=True, slots=True)
class Policy:
    """What `check` holds mail to: the bot's address, the allow-list, the authserv-id
    whose Authentication-Results count (None: nobody verifies senders), how many of
    its own `Received` headers may sit above them (None: any), and whether mail nobody
    verified is taken, as unverified, instead of refused."""

    own_address: str
    allow: list[str]
    authserv_id: str | None = None
    hops: int | None = 0
    accept_unverified: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why `mail` is refused (None: taken), and why its sender is not verified (None:
    verified; else taken only under EMAIL_UNVERIFIED=accept)."""

    refused: str | None = None
    unverified: str | None = None


def check(mail: ParsedMail, policy: Policy, guard: RateGuard) -> Verdict:
    """Whether a person may be answered, and whether the mail server vouched for them."""
    if mail.sender_refused:
        return Verdict(f"sender unclear: {mail.sender_refused}")
    reason = machine_reason(mail, policy.own_address.lower())
    if reason is not None:
        return Verdict(reason)
    if not allowed(mail.sender, policy.allow):
        return Verdict("sender not allowed (EMAIL_ALLOWED_SENDERS)")
    unverified = unverified_reason(mail, policy)
    if unverified is not None and not policy.accept_unverified:
        return Verdict(f"sender not verified: {unverified}", unverified)
    if not guard.admit(mail.sender, mail.message_id):
        return Verdict(f"loop: more than {guard.limit} mails in an hour from this sender")
    return Verdict(None, unverified)


def unverified_reason(mail: ParsedMail, policy: Policy) -> str | None:
    """None when the receiving server verified the From domain, else why not."""
    if policy.authserv_id is None:
        return "EMAIL_AUTHSERV_ID is not set"
    trusted = auth.trusted(mail.trace, policy.authserv_id, policy.hops)
    if trusted:
        return auth.verified(trusted, mail.sender.rpartition("@")[2])
    found = auth.depth(mail.trace, policy.authserv_id)
    if found is None:
        return "no Authentication-Results from EMAIL_AUTHSERV_ID"
    return (
        f"the Authentication-Results from EMAIL_AUTHSERV_ID sit below {found} Received "
        f"header(s), past EMAIL_AUTHSERV_HOPS={policy.hops} (set it to {found} if your "
        "own servers add them)"
    )
