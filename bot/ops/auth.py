"""Who may see and act on the dashboard.

With SWITCHBOARD_DASHBOARD_TOKEN: the token as a bearer header, or the session cookie
the login form sets. Each login makes a random session id (kept in memory, so a
restart logs everyone out), which expires after SESSION_SECONDS and ends at logout;
the cookie is HttpOnly, SameSite=Strict, and `Secure` when SWITCHBOARD_COOKIE_SECURE
says so (never because a client sent a header). Without a token the dashboard is
open, which settings allow only on a loopback bind, and answers only requests whose
`Host` names that bind (a web page cannot reach it through a name it rebinds to
127.0.0.1: DNS rebinding) and that carry no proxy header (`Forwarded`,
`X-Forwarded-For`, `X-Forwarded-Host`, `X-Real-IP`): a reverse proxy connects from
loopback, and with its default `Host` (nginx's `$proxy_host`, Apache's
`ProxyPreserveHost Off`) names the bind, so without that check it would open the
dashboard to whoever reaches the proxy.

Failed sign-ins (a wrong token at the login form or as a bearer header) are counted
per client address (bot/ops/throttle.py): past a few a minute, that address gets 429.

Every form carries a CSRF token: an HMAC of the session id (or of "open" without a
token) under a key made at start; a post without the right one changes nothing.
Every comparison is `hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import time

from aiohttp import web

from bot.ops.throttle import Throttle

COOKIE = "switchboard_session"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 1000
CSRF_FIELD = "csrf"
_OPEN = "open"
#: headers a reverse proxy adds: a request carrying one did not come from this machine
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-IP")


class Access:
    def __init__(
        self, token: str | None, *, host: str = "127.0.0.1", port: int = 0, secure: bool = False
    ) -> None:
        self._token = token.encode() if token else None
        self._sessions: dict[str, float] = {}  # id -> expires at (epoch seconds)
        self._csrf_key = secrets.token_bytes(32)
        self._hosts = _loopback_names(host, port)
        self.secure = secure
        self.failures = Throttle()

    @property
    def open(self) -> bool:
        return self._token is None

    # -- who is asking -----------------------------------------------------------------
    def allowed(self, request: web.Request) -> bool:
        """A token holder, or, when there is no token, a request made on this machine to
        the loopback bind. A wrong bearer token counts as a failed sign-in."""
        if self._token is None:
            return self.host_ok(request) and not self.forwarded(request)
        header = request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            if self.token_matches(header[7:].strip()):
                return True
            self.failures.failed(client(request))
            return False
        return self._session(request) is not None

    def host_ok(self, request: web.Request) -> bool:
        """The `Host` names the loopback bind (always true with a token)."""
        return self._token is not None or request.host.lower() in self._hosts

    def forwarded(self, request: web.Request) -> bool:
        """Without a token: the request came through a proxy (always false with one)."""
        return self._token is None and any(h in request.headers for h in PROXY_HEADERS)

    def throttled(self, request: web.Request) -> float:
        """Seconds until this client may try a token again (0: now)."""
        return self.failures.wait(client(request))

    def token_matches(self, given: str) -> bool:
        return self._token is not None and hmac.compare_digest(given.encode(), self._token)

    def _session(self, request: web.Request) -> str | None:
        given = request.cookies.get(COOKIE, "")
        expires = self._sessions.get(given) if given else None
        if expires is None:
            return None
        if expires < time.time():
            del self._sessions[given]
            return None
        return given

    # -- sessions ----------------------------------------------------------------------
    def log_in(self, response: web.StreamResponse) -> None:
        self._forget_expired()
        session = secrets.token_urlsafe(32)
        self._sessions[session] = time.time() + SESSION_SECONDS
        response.set_cookie(
            COOKIE, session, httponly=True, samesite="Strict", secure=self.secure, path="/",
            max_age=SESSION_SECONDS,
        )  # fmt: skip

    def log_out(self, request: web.Request, response: web.StreamResponse) -> None:
        self._sessions.pop(request.cookies.get(COOKIE, ""), None)
        response.del_cookie(COOKIE, path="/")

    def _forget_expired(self) -> None:
        now = time.time()
        for session in [s for s, t in self._sessions.items() if t < now]:
            del self._sessions[session]
        while len(self._sessions) >= MAX_SESSIONS:  # the oldest login goes first
            del self._sessions[min(self._sessions, key=self._sessions.__getitem__)]

    # -- CSRF --------------------------------------------------------------------------
    def csrf(self, request: web.Request) -> str:
        """The token this requester's forms carry."""
        subject = self._session(request) or _OPEN
        return hmac.new(self._csrf_key, subject.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, request: web.Request, given: object) -> bool:
        return isinstance(given, str) and hmac.compare_digest(given, self.csrf(request))


WRONG_HOST = (
    "403: without SWITCHBOARD_DASHBOARD_TOKEN the dashboard answers only at its loopback "
    "address (http://127.0.0.1:<port>/); the Host of this request names something else."
)
FORWARDED = (
    "403: this request came through a proxy, and without SWITCHBOARD_DASHBOARD_TOKEN the "
    "dashboard answers only on its own machine; set the token to serve it behind a proxy."
)
THROTTLED = "429: too many wrong tokens from this address; try again in {seconds} s."
_NO_STORE = {"Cache-Control": "no-store"}


def refusal(access: Access, request: web.Request) -> web.Response | None:
    """The 403 of an open dashboard asked through a proxy or by another name, else None."""
    if access.forwarded(request):
        return web.Response(status=403, text=FORWARDED, headers=_NO_STORE)
    if not access.host_ok(request):
        return web.Response(status=403, text=WRONG_HOST, headers=_NO_STORE)
    return None


def throttled_response(wait: float) -> web.Response:
    seconds = max(1, math.ceil(wait))
    return web.Response(
        status=429, text=THROTTLED.format(seconds=seconds),
        headers={"Retry-After": str(seconds), **_NO_STORE},
    )  # fmt: skip


def client(request: web.Request) -> str:
    """The address the connection came from: a proxy's own, never a header a client
    could write (behind a proxy every client shares the proxy's count)."""
    return request.remote or "unknown"


def _loopback_names(host: str, port: int) -> frozenset[str]:
    """The `Host` values that name a loopback bind: the address itself, and `localhost`
    when the bind is a loopback address (browsers send the port unless it is 80)."""
    names = {host.lower()}
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and address.is_loopback):
        names |= {"localhost", "127.0.0.1" if address is None or address.version == 4 else ""}
    names.discard("")
    bracketed = {f"[{n}]" if ":" in n else n for n in names}
    with_port = {f"{n}:{port}" for n in bracketed}
    return frozenset(with_port | (bracketed if port == 80 else set()))
