"""Who may talk to the bot by email, and which mail must never be answered.

Email is open to the whole world, so the allow-list is deny-by-default
(EMAIL_ALLOWED_SENDERS: addresses and `@domain`s). Machine mail is never answered
(machine.py names why: bounces, auto-replies, reports, list mail, our own mail),
nor a sender who suddenly sends more than a person would (a loop with a responder
that marks nothing). `check` returns the reason to refuse, or None.
Pure functions of a parsed mail, plus one small in-memory rate window.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

from channels.email.machine import machine_reason
from channels.email.parse import ParsedMail

#: our outgoing mail carries `X-Loop: <our address>` (RFC 3834-style loop marker)
LOOP_HEADER = "X-Loop"
WINDOW_SECONDS = 3600.0


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
        self._seen: dict[str, deque[float]] = defaultdict(deque)

    def admit(self, sender: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        times = self._seen[sender]
        while times and now - times[0] > self.window:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True


def check(mail: ParsedMail, own_address: str, allow: list[str], guard: RateGuard) -> str | None:
    """The reason to refuse `mail`, or None when a person may be answered."""
    reason = machine_reason(mail, own_address.lower())
    if reason is not None:
        return reason
    if not allowed(mail.sender, allow):
        return "sender not allowed (EMAIL_ALLOWED_SENDERS)"
    if not guard.admit(mail.sender):
        return f"loop: more than {guard.limit} mails in an hour from this sender"
    return None
