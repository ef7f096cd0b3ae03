"""Where EMAIL_AUTH=oauth2 gets its tokens: `token_source(settings)`.

- generic: the client-credentials grant at EMAIL_OAUTH_TOKEN_URL over aiohttp, the
  secret in the form body or as HTTP Basic (EMAIL_OAUTH_CLIENT_AUTH);
- microsoft: MSAL for Python (app-only client credentials with a secret or a
  certificate, or a person's refresh token: delegated);
- google: google-auth (a person's refresh token with the OAuth client, or a service
  account acting as the mailbox).

MSAL and google-auth are imported only here, and only when that provider is
configured (optional extras: `pip install 'switchboard[microsoft]'` / `[google]`).
Their calls block, so they run in a worker thread, bounded by FETCH_SECONDS.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from datetime import UTC
from typing import Any
from urllib.parse import quote_plus

import aiohttp

from channels.email import oauth_errors
from channels.email.oauth import FETCH_SECONDS, RefreshStore, SignInError, Token, TokenSource
from config.email_auth import (
    GOOGLE_SCOPE,
    GOOGLE_TOKEN_URL,
    MICROSOFT_APP_SCOPE,
    MICROSOFT_USER_SCOPES,
)
from config.settings import Settings

_PEM_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.+?-----END [A-Z ]*PRIVATE KEY-----", re.S
)
_PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def token_source(settings: Settings) -> TokenSource | None:
    """The tokens for EMAIL_AUTH=oauth2; None when the channel signs in with a password."""
    if settings.email_auth != "oauth2":
        return None
    provider = settings.email_oauth_provider
    if provider == "microsoft":
        return TokenSource(Microsoft(settings).fetch)
    if provider == "google":
        return TokenSource(Google(settings).fetch)
    return TokenSource(Generic(settings).fetch)


def _token(value: object, expires_in: object, now: float) -> Token:
    if not isinstance(value, str) or not value:
        raise SignInError("the token endpoint answered without an access_token", False)
    try:
        life = float(expires_in) if expires_in is not None else 3600.0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        life = 3600.0
    return Token(value, now + max(life, 1.0), now)


def _secret(settings: Settings) -> str | None:
    secret = settings.email_oauth_client_secret
    return secret.get_secret_value() if secret is not None else None


def _seed(settings: Settings) -> str | None:
    token = settings.email_oauth_refresh_token
    return token.get_secret_value() if token is not None else None


class Generic:
    """RFC 6749 section 4.4: client credentials, one POST per token."""

    def __init__(self, settings: Settings) -> None:
        assert settings.email_oauth_token_url is not None
        self.url = settings.email_oauth_token_url
        self.client_id = settings.email_oauth_client_id or ""
        self.secret = _secret(settings) or ""
        self.scope = settings.email_oauth_scope
        self.basic = settings.email_oauth_client_auth == "basic"

    async def fetch(self) -> Token:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        headers = {"Accept": "application/json"}
        if self.basic:  # RFC 6749 section 2.3.1: each part form-encoded first
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self.secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form |= {"client_id": self.client_id, "client_secret": self.secret}
        timeout = aiohttp.ClientTimeout(total=FETCH_SECONDS)
        now = time.time()
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(self.url, data=form, headers=headers, allow_redirects=False) as resp,
            ):
                status, kind, body = resp.status, resp.content_type, await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise oauth_errors.unreachable(self.url, exc) from None
        data = _json(body)
        if data is None:
            raise oauth_errors.not_json(status, kind, self.url)
        if status != 200 or "error" in data:
            error, said = str(data.get("error", "")), str(data.get("error_description", ""))
            raise oauth_errors.token_error("generic", error, said, status)
        return _token(data.get("access_token"), data.get("expires_in"), now)


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


async def _in_thread(call: Any, what: str) -> Any:
    try:
        return await asyncio.wait_for(asyncio.to_thread(call), FETCH_SECONDS)
    except TimeoutError:
        raise SignInError(f"{what} did not answer in {FETCH_SECONDS:g}s; trying again",
                          needs_person=False) from None  # fmt: skip


class Microsoft:
    """Microsoft 365 through MSAL: app-only (a secret or a certificate) or delegated."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.authority = (
            f"{settings.email_oauth_authority.rstrip('/')}/{settings.email_oauth_tenant}"
        )
        self.delegated = settings.oauth_delegated
        self.store = RefreshStore(settings.data_dir, _seed(settings))
        self.app: Any = None

    def _build(self) -> Any:
        import msal  # only when Microsoft is the provider

        kwargs: dict[str, Any] = {
            "authority": self.authority,
            "instance_discovery": False,  # the authority is the operator's own setting
            "timeout": FETCH_SECONDS,
        }
        client_id = self.settings.email_oauth_client_id
        if self.delegated:
            return msal.PublicClientApplication(client_id, **kwargs)
        return msal.ConfidentialClientApplication(
            client_id, client_credential=self._credential(), **kwargs
        )

    def _credential(self) -> Any:
        cert = self.settings.email_oauth_cert_file
        if cert is None:
            return _secret(self.settings)
        if cert.suffix.lower() in (".pfx", ".p12"):
            return {"private_key_pfx_path": str(cert)}
        pem = cert.read_text(encoding="ascii", errors="replace")
        key = _PEM_KEY.search(pem)
        certificate = _PEM_CERT.search(pem)
        if key is None or certificate is None:
            raise SignInError(
                "EMAIL_OAUTH_CERT_FILE must hold the private key and the certificate (PEM), "
                "or be a .pfx file"
            )
        # MSAL (1.35+) takes the certificate's SHA-256 thumbprint from it
        return {"private_key": key.group(0), "public_certificate": certificate.group(0)}

    async def fetch(self) -> Token:
        return await _in_thread(self._fetch, "Microsoft's token endpoint")

    def _fetch(self) -> Token:
        now = time.time()
        try:
            if self.app is None:
                self.app = self._build()
            result = self._delegated() if self.delegated else self._app_only()
        except ValueError as exc:  # MSAL: the authority's discovery failed
            raise SignInError(
                f"Microsoft has no tenant {self.settings.email_oauth_tenant!r} at "
                f"{self.authority} ({str(exc)[:160]}): check EMAIL_OAUTH_TENANT"
            ) from None
        except OSError as exc:  # requests' connection errors are OSErrors
            raise oauth_errors.unreachable(self.authority, exc) from None
        if "access_token" not in result:
            error, said = str(result.get("error", "")), str(result.get("error_description", ""))
            raise oauth_errors.token_error("microsoft", error, said)
        if self.delegated and result.get("refresh_token"):
            self.store.save(result["refresh_token"])  # Microsoft hands out a new one
        return _token(result["access_token"], result.get("expires_in"), now)

    def _app_only(self) -> dict[str, Any]:
        cache = self.app.token_cache  # MSAL keeps app tokens: drop them, we keep ours
        for item in cache.search(cache.CredentialType.ACCESS_TOKEN):
            cache.remove_at(item)
        scope = self.settings.email_oauth_scope or MICROSOFT_APP_SCOPE
        return self.app.acquire_token_for_client(scopes=[scope])

    def _delegated(self) -> dict[str, Any]:
        refresh = self.store.load()
        if refresh is None:
            raise SignInError(
                "no Microsoft 365 sign-in is stored yet: run `switchboard email login` once "
                "(or set EMAIL_OAUTH_CLIENT_SECRET for app-only access)"
            )
        scopes = self.settings.email_oauth_scope
        wanted = scopes.split() if scopes else list(MICROSOFT_USER_SCOPES)
        return self.app.acquire_token_by_refresh_token(refresh, scopes=wanted)


class Google:
    """Google Workspace or Gmail through google-auth."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = settings.email_oauth_token_url or GOOGLE_TOKEN_URL
        self.store = RefreshStore(settings.data_dir, _seed(settings))

    async def fetch(self) -> Token:
        return await _in_thread(self._fetch, "Google's token endpoint")

    def _credentials(self) -> Any:
        s = self.settings
        scopes = [s.email_oauth_scope or GOOGLE_SCOPE]
        if s.email_oauth_service_account_file is not None:
            from google.oauth2 import service_account

            creds = service_account.Credentials.from_service_account_file(
                str(s.email_oauth_service_account_file), scopes=scopes,
                subject=s.imap_user or s.email_address,
            )  # fmt: skip
            return creds.with_token_uri(self.url) if s.email_oauth_token_url else creds
        from google.oauth2.credentials import Credentials

        return Credentials(
            None, refresh_token=self.store.load(), token_uri=self.url, scopes=scopes,
            client_id=s.email_oauth_client_id, client_secret=_secret(s),
        )  # fmt: skip

    def _fetch(self) -> Token:
        import google.auth.exceptions
        import google.auth.transport.requests

        now = time.time()
        creds = self._credentials()
        try:
            creds.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.RefreshError as exc:
            data = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], dict) else {}
            error = str(data.get("error", "")) or str(exc.args[0] if exc.args else exc)
            said = str(data.get("error_description", ""))
            if not data and error.lstrip().startswith("<"):  # a proxy's or an outage's page
                raise SignInError(f"the token endpoint {self.url} answered HTML, not a token; "
                                  "trying again", needs_person=False) from None  # fmt: skip
            service_account = self.settings.email_oauth_service_account_file is not None
            raise oauth_errors.token_error(
                "google", error.split(":")[0], said, service_account=service_account
            ) from None
        except google.auth.exceptions.TransportError as exc:
            raise oauth_errors.unreachable(self.url, exc) from None
        new_refresh = getattr(creds, "refresh_token", None)
        if new_refresh and new_refresh != self.store.load():
            self.store.save(new_refresh)
        expiry = (
            creds.expiry.replace(tzinfo=UTC).timestamp() if creds.expiry else now + 3600
        )  # naive UTC
        return _token(creds.token, expiry - now, now)
