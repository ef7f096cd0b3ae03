"""`switchboard email login`: the one-time sign-in of a person's mailbox (delegated).

Microsoft 365 (EMAIL_OAUTH_PROVIDER=microsoft with no client secret or certificate):
MSAL's device code flow. The command prints the page and the code; the person opens
the page on any device, enters the code and signs in as the mailbox; the command polls
until then (or until the code expires), and stores the refresh token in the data dir
(mode 0600), where `switchboard run` finds it. Google does not allow its mail scope in
the device flow: its refresh token is set as EMAIL_OAUTH_REFRESH_TOKEN (docs/email.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels.email.oauth_errors import token_error
from channels.email.oauth_providers import Microsoft
from config.email_auth import MICROSOFT_USER_SCOPES
from config.settings import Settings

NOT_HERE = (
    "switchboard email login signs a person's Microsoft 365 mailbox in: set EMAIL_AUTH=oauth2, "
    "EMAIL_OAUTH_PROVIDER=microsoft, EMAIL_OAUTH_TENANT and EMAIL_OAUTH_CLIENT_ID (an app "
    "registration with public client flows allowed, and no client secret)."
)
GOOGLE = (
    "Google does not allow the mail scope (https://mail.google.com/) in the device code "
    "flow: get the refresh token once with your OAuth client (docs/email.md, Google) and "
    "set it as EMAIL_OAUTH_REFRESH_TOKEN."
)
APP_ONLY = (
    "EMAIL_OAUTH_CLIENT_SECRET or EMAIL_OAUTH_CERT_FILE is set: the app signs in as "
    "itself (app-only) and needs no person's sign-in. Unset them to sign a person in."
)


def login(settings: Settings, out: Callable[[str], None] = print) -> int:
    """Run the device code flow; 0 once the refresh token is stored."""
    if settings.email_auth != "oauth2" or settings.email_oauth_provider == "generic":
        out(NOT_HERE)
        return 2
    if settings.email_oauth_provider == "google":
        out(GOOGLE)
        return 2
    if not settings.oauth_delegated:
        out(APP_ONLY)
        return 2
    microsoft = Microsoft(settings)
    try:
        app = microsoft._build()
        flow: dict[str, Any] = app.initiate_device_flow(scopes=list(MICROSOFT_USER_SCOPES))
    except (ValueError, OSError) as exc:
        out(f"switchboard email login: {microsoft.authority} cannot be used ({exc})")
        return 1
    if "user_code" not in flow:
        out(f"switchboard email login: {_line(flow)}")
        return 1
    out(str(flow.get("message") or f"Open {flow['verification_uri']}, enter {flow['user_code']}"))
    out("Waiting for the sign-in (Ctrl-C to stop)...")
    result: dict[str, Any] = app.acquire_token_by_device_flow(flow)
    if "refresh_token" not in result:
        out(f"switchboard email login: {_line(result)}")
        return 1
    account = str((result.get("id_token_claims") or {}).get("preferred_username", ""))
    store = microsoft.store  # kept over EMAIL_OAUTH_REFRESH_TOKEN, as the newer sign-in
    store.save(result["refresh_token"], account)
    who = f" as {account}" if account else ""
    out(f"Signed in{who}. The refresh token is in {store.path} (mode 0600); "
        "`switchboard run` signs in with it.")  # fmt: skip
    return 0


def _line(result: dict[str, Any]) -> str:
    error = str(result.get("error", "no answer"))
    return token_error("microsoft", error, str(result.get("error_description", ""))).line
