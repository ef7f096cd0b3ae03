"""IMAP `AUTHENTICATE` with an OAuth2 token: XOAUTH2, else OAUTHBEARER (RFC 7628).

aioimaplib's own `xoauth2()` sends the initial response and then waits for the tagged
answer; but a server that refuses the token (Gmail, dovecot's oauth2 passdb) first
sends a continuation carrying a base64 JSON error and waits for the client's reply
before it says NO. aioimaplib only appends that line, so the command hangs until its
timeout. `Authenticate` answers every continuation: with the initial response when the
server has no SASL-IR (it asks with an empty `+`), then, for an error challenge, with
an empty line (XOAUTH2) or `%x01` (OAUTHBEARER, RFC 7628 section 3.2.3), which gets
the tagged NO. The challenges it saw are kept, to say why the token was refused.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable

import aioimaplib

from channels.email.oauth import oauthbearer, xoauth2

MECHANISMS = ("XOAUTH2", "OAUTHBEARER")  # in the order tried: XOAUTH2 where offered
_ABORT = {"XOAUTH2": b"", "OAUTHBEARER": base64.b64encode(b"\x01")}


def initial_response(mechanism: str, user: str, token: str) -> bytes:
    return xoauth2(user, token) if mechanism == "XOAUTH2" else oauthbearer(user, token)


def choose(capabilities: set[str]) -> str | None:
    """The mechanism to use: XOAUTH2 where offered, else OAUTHBEARER, else None."""
    offered = {c.upper() for c in capabilities}
    return next((m for m in MECHANISMS if f"AUTH={m}" in offered), None)


class Authenticate(aioimaplib.Command):
    """`AUTHENTICATE <mechanism> [<initial response>]`, answering each continuation."""

    def __init__(
        self,
        tag: str,
        mechanism: str,
        initial: bytes,
        sasl_ir: bool,
        write: Callable[[bytes], None],
        loop: asyncio.AbstractEventLoop,
        timeout: float,
    ) -> None:
        args = (mechanism, initial.decode("ascii")) if sasl_ir else (mechanism,)
        super().__init__("AUTHENTICATE", tag, *args, loop=loop, timeout=timeout)
        self._write = write
        self._to_send = [] if sasl_ir else [initial]
        self._abort = _ABORT[mechanism]
        self._answered = 0
        self.challenges: list[bytes] = []

    def flush(self) -> None:
        """Called after every chunk the server sends: answer continuations not yet answered."""
        continuations = [
            line for line in self._resp_lines if isinstance(line, bytes) and line.startswith(b"+")
        ]
        while self._answered < len(continuations):
            line = continuations[self._answered]
            self._answered += 1
            if self._to_send:
                self._write(self._to_send.pop(0) + b"\r\n")
            else:
                self.challenges.append(line[1:].strip())
                self._write(self._abort + b"\r\n")
