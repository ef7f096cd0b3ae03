"""Who may see the dashboard: SWITCHBOARD_DASHBOARD_TOKEN as a bearer header, or the
session cookie the login form sets.

Without a token the dashboard is open, which settings allow only on a loopback bind.
Every comparison is `hmac.compare_digest` (no timing difference between a wrong and a
right token worth measuring). The cookie holds an HMAC of the token, not the token,
and is HttpOnly and SameSite=Strict.
"""

from __future__ import annotations

import hashlib
import hmac

from aiohttp import web

COOKIE = "switchboard_session"
_SESSION = b"switchboard dashboard session v1"


class Access:
    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token else None
        self._session = (
            hmac.new(self._token, _SESSION, hashlib.sha256).hexdigest().encode()
            if self._token
            else b""
        )

    @property
    def open(self) -> bool:
        return self._token is None

    def allowed(self, request: web.Request) -> bool:
        if self._token is None:
            return True
        header = request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            return self.token_matches(header[7:].strip())
        cookie = request.cookies.get(COOKIE, "").encode()
        return hmac.compare_digest(cookie, self._session)

    def token_matches(self, given: str) -> bool:
        return self._token is not None and hmac.compare_digest(given.encode(), self._token)

    def log_in(self, response: web.StreamResponse, secure: bool) -> None:
        response.set_cookie(
            COOKIE,
            self._session.decode(),
            httponly=True,
            samesite="Strict",
            secure=secure,
            path="/",
            max_age=30 * 86400,
        )
