"""Access tokens for EMAIL_AUTH=oauth2: fetched when needed, refreshed before they expire.

`TokenSource.token()` answers from memory while the token has more than its margin
left (a quarter of its life, at most REFRESH_MARGIN_SECONDS), else asks the provider
(oauth_providers.py) once for all callers; `refused(token)` drops a token a server
refused so the next caller gets a fresh one. Access tokens live only in memory. A
person's refresh token (`switchboard email login`, or EMAIL_OAUTH_REFRESH_TOKEN) is
kept in the data dir, mode 0600 (`RefreshStore`): the provider may hand out a new one
with each use (Microsoft does), and the newest must survive a restart.

Every failure is a `SignInError` whose text is one line a person can act on (naming
the setting or the admin step; oauth_errors.py), and says whether a person must act
(`needs_person`) or it may pass by itself (a token endpoint that is down).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from channels.errors import ChannelError

log = logging.getLogger(__name__)

REFRESH_MARGIN_SECONDS = 300.0
FETCH_SECONDS = 20.0  # one answer from a token endpoint at the most
STORE_NAME = "email-oauth.json"


class SignInError(ChannelError):
    """Signing in failed; the text is one line naming the setting or the admin step."""

    def __init__(self, line: str, needs_person: bool = True) -> None:
        super().__init__(line)
        self.line = line
        self.needs_person = needs_person


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    expires_at: float  # wall clock (time.time())
    fetched_at: float

    @property
    def renew_at(self) -> float:
        """When to get a new one: a quarter of its life (at most the margin) before it ends."""
        life = max(self.expires_at - self.fetched_at, 0.0)
        return self.expires_at - min(REFRESH_MARGIN_SECONDS, life / 4)

    def __repr__(self) -> str:  # never the token itself, in a log or a traceback
        return f"Token(expires_at={self.expires_at:.0f})"


Fetch = Callable[[], Awaitable[Token]]


class TokenSource:
    """One provider's tokens, shared by IMAP and SMTP: one fetch at a time."""

    def __init__(self, fetch: Fetch, clock: Callable[[], float] = time.time) -> None:
        self._fetch = fetch
        self._clock = clock
        self._token: Token | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0  # tokens fetched: refreshes show here

    async def token(self) -> Token:
        async with self._lock:
            current = self._token
            if current is not None and self._clock() < current.renew_at:
                return current
            try:
                async with asyncio.timeout(FETCH_SECONDS + 5):
                    fresh = await self._fetch()
            except TimeoutError:
                raise SignInError(
                    f"the token endpoint did not answer in {FETCH_SECONDS:g}s; "
                    "trying again", needs_person=False,
                ) from None  # fmt: skip
            self.fetches += 1
            self._token = fresh
            log.info("email: new OAuth2 access token, valid %.0fs",
                     fresh.expires_at - fresh.fetched_at)  # fmt: skip
            return fresh

    def refused(self, token: Token) -> None:
        """A server refused `token`: the next caller fetches a new one."""
        if self._token is token:
            self._token = None


def xoauth2(user: str, token: str) -> bytes:
    """SASL XOAUTH2's initial response (Google, Microsoft), base64."""
    return base64.b64encode(f"user={user}\x01auth=Bearer {token}\x01\x01".encode())


def oauthbearer(user: str, token: str) -> bytes:
    """SASL OAUTHBEARER's initial response (RFC 7628), base64."""
    escaped = user.replace("=", "=3D").replace(",", "=2C")
    return base64.b64encode(f"n,a={escaped},\x01auth=Bearer {token}\x01\x01".encode())


def server_error(challenge: bytes) -> dict[str, str]:
    """The JSON error a server sends as a SASL challenge on a refused token ({} if none)."""
    try:
        data = json.loads(base64.b64decode(challenge.strip(), validate=True))
    except (ValueError, TypeError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


class RefreshStore:
    """A person's refresh token in the data dir, mode 0600. `seed` is the refresh token
    the settings name (EMAIL_OAUTH_REFRESH_TOKEN): a stored one that came from an older
    seed gives way to a new seed, so an operator can always replace it."""

    def __init__(self, data_dir: Path, seed: str | None = None) -> None:
        self.path = data_dir / STORE_NAME
        self.seed = seed

    def load(self) -> str | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self.seed
        except (OSError, ValueError) as exc:
            log.error("email: %s cannot be read (%s); using the configured token", self.path, exc)
            return self.seed
        if self.seed is not None and data.get("seed") != _digest(self.seed):
            return self.seed
        token = data.get("refresh_token")
        return token if isinstance(token, str) and token else self.seed

    def save(self, refresh_token: str, account: str = "") -> None:
        data = {"refresh_token": refresh_token, "account": account, "saved_at": time.time()}
        if self.seed is not None:
            data["seed"] = _digest(self.seed)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.chmod(temporary, 0o600)  # also when the file was there with looser bits
        os.replace(temporary, self.path)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]
