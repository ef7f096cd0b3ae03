"""What a refused sign-in means, in one line a person can act on.

A token endpoint answers an OAuth 2.0 error (RFC 6749 section 5.2: `error`, and
`error_description`, where Microsoft puts its AADSTS code); a mail server refuses a
token with NO/535, perhaps after a JSON challenge (`{"status": "401", ...}`). Each is
mapped to the setting to fix or the admin step to take (docs/email.md, "Signing in
without a password (OAuth2)"). A problem a person must fix `needs_person`; an
endpoint that is down or answered nonsense may pass by itself.
"""

from __future__ import annotations

import re

from channels.email.oauth import SignInError

DOCS = 'docs/email.md, "Signing in without a password (OAuth2)"'
_AADSTS = re.compile(r"AADSTS(\d+)")

CONSENT = (
    "Microsoft 365 says the app EMAIL_OAUTH_CLIENT_ID has no consent (AADSTS{code}): an "
    "admin must grant admin consent for its IMAP/SMTP permissions in the Entra admin "
    f"center (App registrations > API permissions > Grant admin consent; {DOCS})"
)
LOGIN_AGAIN = (
    "the sign-in's refresh token was refused ({why}): it expired or was revoked; run "
    "`switchboard email login` again (or set a new EMAIL_OAUTH_REFRESH_TOKEN)"
)
_MICROSOFT = {
    "65001": CONSENT,
    "650057": CONSENT,
    "7000215": "EMAIL_OAUTH_CLIENT_SECRET is not a valid secret of the app (AADSTS7000215): "
    "copy the secret's Value (not its ID) from App registrations > Certificates & secrets",
    "7000222": "EMAIL_OAUTH_CLIENT_SECRET has expired (AADSTS7000222): add a new client "
    "secret under App registrations > Certificates & secrets and set it",
    "700027": "the certificate in EMAIL_OAUTH_CERT_FILE is not one the app knows "
    "(AADSTS700027): upload it under App registrations > Certificates & secrets",
    "700016": "EMAIL_OAUTH_CLIENT_ID is not an app of tenant EMAIL_OAUTH_TENANT (AADSTS700016)",
    "90002": "EMAIL_OAUTH_TENANT names no Microsoft Entra tenant (AADSTS90002)",
    "500011": "the Office 365 Exchange Online service is not in tenant EMAIL_OAUTH_TENANT "
    "(AADSTS500011): the tenant has no Exchange Online, or EMAIL_OAUTH_SCOPE is wrong",
}


def token_error(
    provider: str,
    error: str,
    description: str = "",
    status: int | None = None,
    service_account: bool = False,
) -> SignInError:
    """A token endpoint's OAuth 2.0 error as one line a person can act on."""
    error = (error or "").strip()
    short = _short(description)
    why = f"{error}: {short}" if short else error
    if (code := _AADSTS.search(description or "")) is not None and code.group(1) in _MICROSOFT:
        return SignInError(_MICROSOFT[code.group(1)].format(code=code.group(1)))
    if error == "invalid_grant" and service_account:  # its key, or a mailbox of no user
        return SignInError(
            f"Google refused the service account's sign-in ({why}): check "
            "EMAIL_OAUTH_SERVICE_ACCOUNT_FILE (a current key) and that IMAP_USER/"
            "EMAIL_ADDRESS is a user of the Workspace domain"
        )
    if error == "invalid_grant" and provider != "generic":
        return SignInError(LOGIN_AGAIN.format(why=why))
    if error == "unauthorized_client" and provider == "google":
        return SignInError(_not_delegated(why))
    if error in ("invalid_client", "unauthorized_client"):
        return SignInError(
            f"the token endpoint refused the client ({why}): check EMAIL_OAUTH_CLIENT_ID "
            "and EMAIL_OAUTH_CLIENT_SECRET" + _basic_hint(provider)
        )
    if error == "invalid_scope":
        return SignInError(f"the token endpoint refused the scope ({why}): check EMAIL_OAUTH_SCOPE")
    if error in ("consent_required", "interaction_required"):
        return SignInError(f"the sign-in needs consent ({why}): run `switchboard email login`")
    if error in ("temporarily_unavailable", "server_error") or (status or 0) >= 500:
        where = f"HTTP {status}" if status else why
        return SignInError(f"the token endpoint failed ({where}); trying again", False)
    return SignInError(f"the token endpoint refused the sign-in ({why or f'HTTP {status}'})")


def not_json(status: int, content_type: str, url: str) -> SignInError:
    """A token endpoint that answered HTML or anything else but a token."""
    kind = "HTML" if "html" in content_type.lower() else content_type or "no JSON"
    if status >= 500 or status in (408, 429):
        return SignInError(f"the token endpoint {url} answered HTTP {status} ({kind}); "
                           "trying again", needs_person=False)  # fmt: skip
    return SignInError(
        f"the token endpoint {url} answered {kind} (HTTP {status}), not a token: is "
        "EMAIL_OAUTH_TOKEN_URL the provider's token endpoint?"
    )


def unreachable(url: str, exc: BaseException) -> SignInError:
    what = str(exc) or type(exc).__name__
    return SignInError(f"the token endpoint {url} cannot be reached ({what[:200]}); "
                       "trying again", needs_person=False)  # fmt: skip


def server_refused(
    protocol: str, user: str, provider: str, delegated: bool, said: str, status: str = ""
) -> SignInError:
    """A mail server that refused the token (after one fresh token was tried)."""
    said = _short(said) or "refused"
    setting = "IMAP_USER" if protocol == "IMAP" else "SMTP_USER"
    head = f"the {protocol} server refused the OAuth2 token for {user} ({said})"
    if status in ("403", "insufficient_scope"):
        return SignInError(f"{head}: the token lacks the mail scope (check EMAIL_OAUTH_SCOPE)")
    if provider == "microsoft" and not delegated:
        permission = "IMAP.AccessAsApp" if protocol == "IMAP" else "SMTP.SendAsApp"
        return SignInError(
            f"{head}: the app may not use this mailbox: grant {permission} with admin "
            "consent, register the app in Exchange (New-ServicePrincipal) and give it the "
            f"mailbox (Add-MailboxPermission -User <its service principal>); {setting} must "
            f"be the mailbox's address ({DOCS})"
        )
    if provider == "google" and not delegated:
        return SignInError(
            f"{head}: the service account may not act as this mailbox: allow its client "
            "ID domain-wide delegation for https://mail.google.com/ in the Admin console, "
            f"and set {setting} to a mailbox of the domain ({DOCS})"
        )
    return SignInError(
        f"{head}: the token is not valid for this mailbox: check {setting} (the "
        "mailbox the token's account may use) and the provider's grant for mail access"
    )


def not_connected(protocol: str, user: str, said: str) -> SignInError:
    """Signed in, yet refused the mailbox (Microsoft: 'User is authenticated but not
    connected'): the app has no permission on this mailbox."""
    return SignInError(
        f"the {protocol} server signed in {user} but refused the mailbox ({_short(said)}): "
        "give the app the mailbox (Exchange: Add-MailboxPermission -User <its service "
        f"principal> -AccessRights FullAccess; {DOCS})"
    )


def no_mechanism(protocol: str, host: str, offered: str) -> SignInError:
    setting = "IMAP_HOST" if protocol == "IMAP" else "SMTP_HOST"
    return SignInError(
        f"the {protocol} server {host} offers neither XOAUTH2 nor OAUTHBEARER (it offers "
        f"{offered or 'no SASL mechanism'}): EMAIL_AUTH=oauth2 cannot sign in there; check "
        f"{setting} or use EMAIL_AUTH=password"
    )


def _basic_hint(provider: str) -> str:
    return " (or EMAIL_OAUTH_CLIENT_AUTH=basic|body)" if provider == "generic" else ""


def _not_delegated(why: str) -> str:
    return (
        f"Google refused the service account ({why}): allow its client ID domain-wide "
        "delegation for https://mail.google.com/ (Admin console > Security > API controls "
        "> Domain-wide delegation), and IMAP_USER/EMAIL_ADDRESS must be a user of the domain"
    )


def _short(text: str) -> str:
    """The first line of a provider's description, without its trace and ids."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first[:240]
