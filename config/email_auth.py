"""How the email channel signs in: EMAIL_AUTH=password (IMAP_PASSWORD, SMTP_PASSWORD) or
oauth2 (an access token, sent as SASL XOAUTH2 or OAUTHBEARER; docs/email.md).

With oauth2 the provider says where tokens come from:
- `microsoft`: Microsoft 365 through MSAL. App-only (client credentials, scope
  `https://outlook.office365.com/.default`) with EMAIL_OAUTH_CLIENT_SECRET or
  EMAIL_OAUTH_CERT_FILE; delegated (a person's mailbox) with neither, from the refresh
  token `switchboard email login` stored, or EMAIL_OAUTH_REFRESH_TOKEN.
- `google`: Google through google-auth. A person's refresh token with the OAuth client
  (EMAIL_OAUTH_CLIENT_ID, EMAIL_OAUTH_CLIENT_SECRET, EMAIL_OAUTH_REFRESH_TOKEN), or a
  service account's key file (EMAIL_OAUTH_SERVICE_ACCOUNT_FILE) acting as the mailbox
  (domain-wide delegation).
- `generic` (the default): the OAuth 2.0 client-credentials grant at EMAIL_OAUTH_TOKEN_URL.

Imports nothing of the project outside `config/`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, SecretStr, field_validator

from config.sources import FieldProblem

if TYPE_CHECKING:
    from config.settings import Settings

MICROSOFT_AUTHORITY = "https://login.microsoftonline.com"
MICROSOFT_APP_SCOPE = "https://outlook.office365.com/.default"
#: a person's mailbox (delegated): read by IMAP, send by SMTP; MSAL adds offline_access
MICROSOFT_USER_SCOPES = (
    "https://outlook.office.com/IMAP.AccessAsUser.All",
    "https://outlook.office.com/SMTP.Send",
)
GOOGLE_SCOPE = "https://mail.google.com/"
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"


class EmailAuthSettings(BaseModel):
    email_auth: Literal["password", "oauth2"] = "password"
    email_oauth_provider: Literal["microsoft", "google", "generic"] = "generic"
    #: generic: the token endpoint; google: instead of Google's own (a test, a proxy)
    email_oauth_token_url: str | None = None
    email_oauth_client_id: str | None = None
    email_oauth_client_secret: SecretStr | None = None
    #: the scope asked for (generic; for microsoft/google the right one is the default)
    email_oauth_scope: str | None = None
    #: generic: the client secret in the form body (`body`) or as HTTP Basic (`basic`)
    email_oauth_client_auth: Literal["body", "basic"] = "body"
    email_oauth_tenant: str | None = None  # microsoft: the directory (tenant) id or domain
    email_oauth_authority: str = MICROSOFT_AUTHORITY  # microsoft: another cloud's login host
    email_oauth_cert_file: Path | None = None  # microsoft: private key + certificate, PEM
    email_oauth_refresh_token: SecretStr | None = None  # a person's, when not stored
    email_oauth_service_account_file: Path | None = None  # google: the key file, JSON

    @field_validator("email_oauth_cert_file", "email_oauth_service_account_file")
    @classmethod
    def _readable(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError("is not a readable file")
        return value

    @property
    def oauth_delegated(self) -> bool:
        """A person's mailbox by their refresh token (not an app's own access)."""
        if self.email_oauth_provider == "microsoft":
            return self.email_oauth_client_secret is None and self.email_oauth_cert_file is None
        if self.email_oauth_provider == "google":
            return self.email_oauth_service_account_file is None
        return False


def check_email_auth(s: Settings) -> None:
    """What EMAIL_AUTH needs, said as one line naming the variable that is missing."""
    if s.email_auth == "password":
        if not s.imap_user:
            raise FieldProblem("imap_user", "is required when EMAIL_ADDRESS is set")
        if not s.imap_password:
            raise FieldProblem(
                "imap_password",
                "is required when EMAIL_ADDRESS is set (or sign in with EMAIL_AUTH=oauth2)",
            )
        return
    provider = s.email_oauth_provider
    need: list[str] = []
    if provider == "generic":
        need = ["email_oauth_token_url", "email_oauth_client_id", "email_oauth_client_secret"]
    elif provider == "microsoft":
        need = ["email_oauth_tenant", "email_oauth_client_id"]
    elif s.email_oauth_service_account_file is None:  # google, a person's refresh token
        need = ["email_oauth_client_id", "email_oauth_client_secret", "email_oauth_refresh_token"]
    for name in need:
        if not getattr(s, name):
            raise FieldProblem(name, f"is required with EMAIL_AUTH=oauth2 ({provider})")
    url = s.email_oauth_token_url
    if url and not (url.startswith("https://") or _loopback_http(url)):
        raise FieldProblem("email_oauth_token_url", "must be an https:// URL")
    if provider == "microsoft" and s.email_oauth_client_secret and s.email_oauth_cert_file:
        raise FieldProblem(
            "email_oauth_cert_file", "and EMAIL_OAUTH_CLIENT_SECRET: set one of them, not both"
        )


def _loopback_http(url: str) -> bool:
    """http:// only to this machine (a local token service), never across a network."""
    return url.startswith(("http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:"))
