"""Servers that check bearer tokens, for the OAuth2 sign-in tests.

`OAuthDovecot` is the tests' dovecot (servers.py) with its `oauth2` passdb: XOAUTH2
and OAUTHBEARER tokens are checked by token introspection (RFC 7662) at the fake
identity provider (tests/fakes/oauth_idp.py), which says which mailbox a token may
use; dovecot signs in only that mailbox. Passwords still work for PLAIN/LOGIN, so the
people of a test read their mail as before. `XOAuthSmtp` is an aiosmtpd server that
accepts XOAUTH2 only (as Microsoft 365's and Gmail's submission servers take it),
asking the same provider whether each token is live and for which mailbox, and
answering a refused token the way Gmail does: a 334 continuation with a base64 JSON
error, then 535 after the client's empty line.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
from aiosmtpd.smtp import SMTP, AuthResult

from tests.email.servers import Dovecot, RelayHandler, SmtpRelay

OAUTH2_CONF = """\
introspection_mode = post
introspection_url = {url}
force_introspection = yes
username_attribute = username
active_attribute = active
active_value = true
"""


class OAuthDovecot(Dovecot):
    def __init__(self, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, introspect: str) -> None:
        super().__init__(ca_pem, cert_pem, key_pem)
        (self.base / "oauth2.conf").write_text(OAUTH2_CONF.format(url=introspect))
        text = self.config.read_text()
        text = text.replace(
            "auth_mechanisms = plain login",
            "auth_mechanisms = plain login xoauth2 oauthbearer\n"
            # dovecot holds every refused sign-in 2 s by default (against guessing); the
            # tests refuse tokens on purpose, and the refusal itself is what they check,
            "auth_failure_delay = 0",
        )
        text = text.replace(
            "passdb {\n  driver = static\n",
            f"passdb {{\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n"
            f"  args = {self.base}/oauth2.conf\n}}\n"
            "passdb {\n  driver = static\n  mechanisms = plain login\n",
        )
        # passdbs limited to mechanisms are skipped for LMTP's user lookups: the static
        # userdb answers for anyone by itself
        text = text.replace("args = uid=8 gid=8", "args = allow_all_users=yes uid=8 gid=8")
        # nor adds the per-IP auth penalty (2, 4, 8, 15 s, kept ~30 s): every test signs
        # in from 127.0.0.1, so one test's refusals slowed the next test's good sign-in
        text += "service anvil {\n  unix_listener anvil-auth-penalty {\n    mode = 0\n  }\n}\n"
        assert "driver = oauth2" in text and "allow_all_users" in text
        self.config.write_text(text)

    def oauth_env(self, address: str, smtp_port: int, allowed: str = "") -> dict[str, str]:
        env = self.env(address, smtp_port, allowed)
        del env["IMAP_PASSWORD"]
        return {**env, "EMAIL_AUTH": "oauth2"}


class XOAuthSmtp(SmtpRelay):
    """aiosmtpd offering AUTH XOAUTH2 only, tokens checked at `introspect`."""

    def __init__(self, handler: RelayHandler, introspect: str) -> None:
        super().__init__(handler)
        self.introspect = introspect
        self.signed_in: list[str] = []
        self.refused = 0

    def _protocol(self) -> SMTP:
        server = _XOAuthServer(
            self.handler, hostname="localhost", auth_require_tls=False,
            auth_exclude_mechanism=["PLAIN", "LOGIN", "CRAM-MD5"], authenticator=_nobody,
        )  # fmt: skip
        server.relay = self
        return server


def _nobody(*args: Any) -> AuthResult:
    return AuthResult(success=False)


class _XOAuthServer(SMTP):
    relay: XOAuthSmtp

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        if len(args) > 1:
            raw = base64.b64decode(args[1])
        else:
            got = await self.challenge_auth("", encode_to_b64=False, log_client_response=False)
            raw = got if isinstance(got, bytes) else b""
        try:
            user, token = _parse(raw.decode())
        except ValueError:
            return AuthResult(success=False, handled=False)
        owner = await self._owner(token)
        if owner is None or owner.lower() != user.lower():
            self.relay.refused += 1
            error = {"status": "401", "schemes": "Bearer", "scope": "https://mail.google.com/"}
            challenge = base64.b64encode(json.dumps(error).encode()).decode()
            await self.challenge_auth(challenge, encode_to_b64=False, log_client_response=False)
            await self.push("535 5.7.8 Username and Password not accepted")
            return AuthResult(success=False, handled=True)
        self.relay.signed_in.append(user)
        return AuthResult(success=True, auth_data=user)

    async def _owner(self, token: str) -> str | None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.relay.introspect, data={"token": token}) as resp,
        ):
            data = await resp.json()
        return str(data["username"]) if data.get("active") else None


def _parse(text: str) -> tuple[str, str]:
    fields = dict(part.split("=", 1) for part in text.split("\x01") if "=" in part)
    auth = fields.get("auth", "")
    if not auth.startswith("Bearer ") or "user" not in fields:
        raise ValueError(text)
    return fields["user"], auth[len("Bearer ") :]
