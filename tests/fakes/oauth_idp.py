"""A fake identity provider on 127.0.0.1: token endpoints and token introspection.

It speaks as the real ones do (RFC 6749 token responses and errors, RFC 7662
introspection, RFC 8628 device authorization), for three kinds of client:
- generic: `POST /token`, the client-credentials grant, secret in the body or Basic;
- Microsoft (MSAL): `/{tenant}/v2.0/.well-known/openid-configuration`,
  `/{tenant}/oauth2/v2.0/token` (client credentials with a secret or a signed
  client assertion, refresh_token, device_code) and `/{tenant}/oauth2/v2.0/devicecode`;
  errors carry AADSTS codes in `error_description` as Entra ID's do. MSAL insists on
  https, so these are also served over TLS (`tls_port`, a trustme certificate);
- Google (google-auth): `POST /google/token`, refresh_token and the JWT-bearer grant
  of a service account (the assertion's RS256 signature checked, its `sub` the mailbox).

`POST /introspect` is what dovecot's oauth2 passdb asks: `{"active": true, "username":
<the mailbox the token may use>}` while a token is live, `{"active": false}` once it
expired or was revoked. A test registers clients, says which mailbox each may use,
injects failures (`fail_next`), slows answers (`delay`), revokes tokens, and approves
a device code as the person at the browser would.
"""

from __future__ import annotations

import base64
import secrets
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.threaded import ThreadedServer

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass
class Client:
    secret: str | None = None
    mailbox: str = ""  # the mailbox its tokens may use (Add-MailboxPermission, delegation)
    public_key: bytes | None = None  # PEM: checks a client assertion or a service account's
    consented: bool = True


@dataclass
class Issued:
    mailbox: str
    expires_at: float
    revoked: bool = False


@dataclass
class Device:
    client_id: str
    user_code: str
    mailbox: str | None = None  # set once approved


@dataclass
class Record:
    """What the fake saw, for assertions."""

    grants: list[str] = field(default_factory=list)
    introspected: list[str] = field(default_factory=list)
    basic: int = 0  # token requests that authenticated with HTTP Basic


class FakeIdP(ThreadedServer[Record]):
    name = "fake identity provider"

    def __init__(self, tls: tuple[bytes, bytes] | None = None) -> None:
        super().__init__()
        self.tls = tls  # (certificate chain, key) PEM, for the https port
        self.tls_port = 0
        self.clients: dict[str, Client] = {}
        self.tokens: dict[str, Issued] = {}
        self.refresh: dict[str, tuple[str, str]] = {}  # refresh token -> client, mailbox
        self.devices: dict[str, Device] = {}
        self.lifetime = 3600.0
        self.delay = 0.0
        #: (status, JSON dict or HTML str[, the one path it answers]): the next request
        #: (to that path) gets it instead of its answer
        self.fail_next: list[tuple[Any, ...]] = []
        self.record = Record()

    # -- what a test does -------------------------------------------------------------
    def reset(self) -> None:
        """A fresh start for the next test on a shared (session-wide) fake: no injected
        failures or delay, the default lifetime, and an empty record. Registered clients
        and issued tokens stay (each test uses its own client and mailbox)."""
        self.fail_next.clear()
        self.delay, self.lifetime = 0.0, 3600.0
        self.record = Record()

    def client(self, client_id: str, **kwargs: Any) -> Client:
        self.clients[client_id] = Client(**kwargs)
        return self.clients[client_id]

    def refresh_token(self, client_id: str, mailbox: str) -> str:
        token = "rt-" + secrets.token_urlsafe(24)
        self.refresh[token] = (client_id, mailbox)
        return token

    def revoke_all(self, mailbox: str | None = None) -> None:
        """Every access and refresh token (of `mailbox`) stops working."""
        for issued in self.tokens.values():
            if mailbox is None or issued.mailbox == mailbox:
                issued.revoked = True
        for token, (_client, owner) in list(self.refresh.items()):
            if mailbox is None or owner == mailbox:
                del self.refresh[token]

    def approve(self, user_code: str, mailbox: str) -> None:
        for device in self.devices.values():
            if device.user_code == user_code:
                device.mailbox = mailbox
                return
        raise KeyError(user_code)

    def issued_count(self) -> int:
        return len(self.tokens)

    def base(self, tls: bool = False) -> str:
        return f"https://127.0.0.1:{self.tls_port}" if tls else f"http://127.0.0.1:{self.port}"

    # -- ThreadedServer -----------------------------------------------------------------
    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/token", self._generic)
        app.router.add_post("/google/token", self._google)
        app.router.add_post("/introspect", self._introspect)
        app.router.add_get("/{tenant}/v2.0/.well-known/openid-configuration", self._oidc)
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._microsoft)
        app.router.add_post("/{tenant}/oauth2/v2.0/devicecode", self._devicecode)

    async def _startup(self) -> None:
        await super()._startup()
        if self.tls is None:
            return
        import tempfile
        from pathlib import Path

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            cert.write_bytes(self.tls[0])
            key.write_bytes(self.tls[1])
            context.load_cert_chain(cert, key)
        assert self._runner is not None
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.tls_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _watched(self) -> Record:
        return self.record

    # -- answers ---------------------------------------------------------------------
    def _issue(self, mailbox: str, refresh: str | None = None) -> web.Response:
        token = "at-" + secrets.token_urlsafe(32)
        self.tokens[token] = Issued(mailbox, time.time() + self.lifetime)
        body: dict[str, Any] = {
            "access_token": token, "token_type": "Bearer", "expires_in": int(self.lifetime),
        }  # fmt: skip
        if refresh is not None:
            body["refresh_token"] = refresh
        self._notify()
        return web.json_response(body)

    async def _before(self, grant: str, path: str = "") -> web.Response | None:
        import asyncio

        self.record.grants.append(grant)
        self._notify()
        if self.delay:
            await asyncio.sleep(self.delay)
        if failure := next((f for f in self.fail_next if f[2:] in ((), (path,))), None):
            self.fail_next.remove(failure)
            status, body = failure[:2]
            if isinstance(body, str):
                return web.Response(status=status, text=body, content_type="text/html")
            return web.json_response(body, status=status)
        return None

    def _client_auth(self, request: web.Request, form: Any) -> tuple[str, str | None]:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            self.record.basic += 1
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return user, password
        return str(form.get("client_id", "")), form.get("client_secret")

    async def _generic(self, request: web.Request) -> web.Response:
        form = await request.post()
        if (failed := await self._before(str(form.get("grant_type")))) is not None:
            return failed
        if form.get("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type")
        client_id, secret = self._client_auth(request, form)
        client = self.clients.get(client_id)
        if client is None or client.secret is None or secret != client.secret:
            return _error(401, "invalid_client", "Client authentication failed.")
        return self._issue(client.mailbox)

    async def _introspect(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token", ""))
        self.record.introspected.append(token)
        issued = self.tokens.get(token)
        if issued is None or issued.revoked or issued.expires_at < time.time():
            return web.json_response({"active": False})
        return web.json_response({"active": True, "username": issued.mailbox})

    # -- Microsoft ---------------------------------------------------------------------
    async def _oidc(self, request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        base = f"https://{request.host}/{tenant}"
        return web.json_response({
            "issuer": f"{base}/v2.0",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
        })  # fmt: skip

    async def _devicecode(self, request: web.Request) -> web.Response:
        form = await request.post()
        client_id = str(form.get("client_id", ""))
        if client_id not in self.clients:
            return _aad(400, "unauthorized_client", 700016, "Application not found.")
        code = secrets.token_urlsafe(24)
        user_code = secrets.token_hex(4).upper()
        self.devices[code] = Device(client_id, user_code)
        uri = "https://microsoft.com/devicelogin"
        return web.json_response({
            "device_code": code, "user_code": user_code, "verification_uri": uri,
            "expires_in": 900, "interval": 1,
            "message": f"To sign in, use a web browser to open the page {uri} and enter "
            f"the code {user_code} to authenticate.",
        })  # fmt: skip

    async def _microsoft(self, request: web.Request) -> web.Response:
        form = await request.post()
        grant = str(form.get("grant_type"))
        if (failed := await self._before(grant)) is not None:
            return failed
        client = self.clients.get(str(form.get("client_id", "")))
        if client is None:
            return _aad(400, "unauthorized_client", 700016, "Application not found.")
        if grant == "client_credentials":
            return self._app_only(client, form)
        if grant == "refresh_token":
            owner = self.refresh.get(str(form.get("refresh_token", "")))
            if owner is None:
                return _aad(400, "invalid_grant", 700082, "The refresh token has expired "
                            "due to inactivity.")  # fmt: skip
            return self._delegated(client, owner[0], owner[1])
        if grant == DEVICE_GRANT:
            device = self.devices.get(str(form.get("device_code", "")))
            if device is None:
                return _aad(400, "expired_token", 70020, "The provided value has expired.")
            if device.mailbox is None:
                return _aad(400, "authorization_pending", 70016, "Waiting for the user.")
            del self.devices[str(form.get("device_code"))]
            return self._delegated(client, device.client_id, device.mailbox)
        return _error(400, "unsupported_grant_type")

    def _app_only(self, client: Client, form: Any) -> web.Response:
        if "client_assertion" in form:
            if not self._assertion_ok(client, str(form["client_assertion"])):
                return _aad(401, "invalid_client", 700027, "Client assertion contains an "
                            "invalid signature.")  # fmt: skip
        elif client.secret is None or form.get("client_secret") != client.secret:
            return _aad(401, "invalid_client", 7000215, "Invalid client secret provided.")
        if not client.consented:
            return _aad(400, "invalid_grant", 65001, "The user or administrator has not "
                        "consented to use the application.")  # fmt: skip
        return self._issue(client.mailbox)

    def _delegated(self, client: Client, client_id: str, mailbox: str) -> web.Response:
        if not client.consented:
            return _aad(400, "invalid_grant", 65001, "The user or administrator has not "
                        "consented to use the application.")  # fmt: skip
        return self._issue(mailbox, refresh=self.refresh_token(client_id, mailbox))

    def _assertion_ok(self, client: Client, assertion: str) -> bool:
        import jwt

        if client.public_key is None:
            return False
        try:
            jwt.decode(assertion, client.public_key, algorithms=["RS256", "PS256"],
                       options={"verify_aud": False})  # fmt: skip
        except jwt.PyJWTError:
            return False
        return True

    # -- Google ------------------------------------------------------------------------
    async def _google(self, request: web.Request) -> web.Response:
        form = await request.post()
        grant = str(form.get("grant_type"))
        if (failed := await self._before(grant, request.path)) is not None:
            return failed
        if grant == JWT_GRANT:
            return self._service_account(str(form.get("assertion", "")))
        if grant != "refresh_token":
            return _error(400, "unsupported_grant_type")
        client = self.clients.get(str(form.get("client_id", "")))
        if client is None or form.get("client_secret") != client.secret:
            return _error(401, "invalid_client", "The OAuth client was not found.")
        owner = self.refresh.get(str(form.get("refresh_token", "")))
        if owner is None:
            return _error(400, "invalid_grant", "Token has been expired or revoked.")
        return self._issue(owner[1])

    def _service_account(self, assertion: str) -> web.Response:
        import jwt

        claims = jwt.decode(assertion, options={"verify_signature": False})
        client = self.clients.get(str(claims.get("iss", "")))
        if client is None or client.public_key is None:
            return _error(400, "invalid_grant", "Invalid JWT Signature.")
        try:
            jwt.decode(assertion, client.public_key, algorithms=["RS256"],
                       options={"verify_aud": False})  # fmt: skip
        except jwt.PyJWTError:
            return _error(400, "invalid_grant", "Invalid JWT Signature.")
        if claims.get("sub") != client.mailbox or claims.get("scope") != "https://mail.google.com/":
            return _error(401, "unauthorized_client", "Client is unauthorized to retrieve "
                          "access tokens using this method, or client not authorized for "
                          "any of the scopes requested.")  # fmt: skip
        return self._issue(client.mailbox)


def _error(status: int, error: str, description: str = "") -> web.Response:
    body = {"error": error}
    if description:
        body["error_description"] = description
    return web.json_response(body, status=status)


def _aad(status: int, error: str, code: int, text: str) -> web.Response:
    """An Entra ID error: the AADSTS code first in the description, a trace id after."""
    description = f"AADSTS{code}: {text} Trace ID: {secrets.token_hex(8)} Timestamp: now"
    return web.json_response(
        {"error": error, "error_description": description, "error_codes": [code]},
        status=status,
    )
