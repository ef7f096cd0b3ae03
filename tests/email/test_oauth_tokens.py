"""Getting tokens, against the fake identity provider (no mail server): the generic
client-credentials grant (secret in the body or as Basic), Microsoft 365 through the
real MSAL (app-only with a secret or a certificate, delegated from a stored refresh
token) and Google through the real google-auth (a refresh token, a service account),
refreshed only once due; and each failure a person can act on as its one line: a
missing consent, a revoked refresh token, a wrong secret, a service account without
delegation, a token endpoint that times out or answers HTML."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from channels.email import oauth, oauth_providers, sasl
from channels.email.oauth import STORE_NAME, SignInError, Token, TokenSource
from channels.email.oauth_providers import token_source
from config.settings import Settings, SettingsError, load_settings
from tests.fakes.oauth_idp import FakeIdP

SECRET = "s3cret-value-0123"


@pytest.fixture
def fresh(idp: FakeIdP) -> FakeIdP:
    idp.reset()
    return idp


@pytest.fixture
def ca_bundle(
    tls_material: tuple[bytes, bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MSAL and google-auth (requests) trust the test CA, as a corporate CA bundle would."""
    path = tmp_path / "ca.pem"
    path.write_bytes(tls_material[0])
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(path))


def _settings(tmp_path: Path, **env: str) -> Settings:
    base = {
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"), "EMAIL_ADDRESS": "bot@localhost",
        "EMAIL_AUTHSERV_ID": "mx.test", "IMAP_HOST": "127.0.0.1", "SMTP_HOST": "127.0.0.1",
        "EMAIL_AUTH": "oauth2",
    }  # fmt: skip
    return load_settings(None, {**base, **env})


def _generic(idp: FakeIdP, tmp_path: Path, **env: str) -> TokenSource:
    idp.client("gen", secret=SECRET, mailbox="bot@localhost")
    settings = _settings(
        tmp_path, EMAIL_OAUTH_TOKEN_URL=f"{idp.base()}/token", EMAIL_OAUTH_CLIENT_ID="gen",
        EMAIL_OAUTH_CLIENT_SECRET=SECRET, **env,
    )  # fmt: skip
    source = token_source(settings)
    assert source is not None
    return source


async def _failure(source: TokenSource) -> str:
    with pytest.raises(SignInError) as caught:
        await source.token()
    assert "\n" not in caught.value.line
    return caught.value.line


# -- generic ------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["body", "basic"])
async def test_generic_client_credentials_in_the_body_or_as_basic(
    fresh: FakeIdP, tmp_path: Path, how: str
) -> None:
    basic = fresh.record.basic
    source = _generic(fresh, tmp_path, EMAIL_OAUTH_CLIENT_AUTH=how)
    token = await source.token()
    assert fresh.tokens[token.value].mailbox == "bot@localhost"
    assert fresh.record.basic == basic + (how == "basic")
    assert await source.token() is token and source.fetches == 1  # from memory


async def test_a_token_is_refreshed_a_margin_before_it_expires(
    fresh: FakeIdP, tmp_path: Path
) -> None:
    fresh.lifetime = 4.0
    source = _generic(fresh, tmp_path)
    first = await source.token()
    assert first.renew_at == pytest.approx(first.expires_at - 1.0, abs=0.01)
    await asyncio.sleep(first.renew_at - time.time() + 0.05)
    second = await source.token()
    assert second.value != first.value and time.time() < first.expires_at


async def test_a_token_endpoint_that_answers_html_or_times_out_is_one_line(
    fresh: FakeIdP, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _generic(fresh, tmp_path)
    fresh.fail_next.append((200, "<html><body>Sign in to continue</body></html>"))
    line = await _failure(source)
    assert "answered HTML (HTTP 200), not a token" in line and "EMAIL_OAUTH_TOKEN_URL" in line
    fresh.fail_next.append((502, "<html>Bad Gateway</html>"))
    with pytest.raises(SignInError) as caught:
        await source.token()
    assert not caught.value.needs_person and "HTTP 502" in caught.value.line
    monkeypatch.setattr(oauth_providers, "FETCH_SECONDS", 0.3)
    fresh.delay = 2.0
    with pytest.raises(SignInError) as caught:
        await source.token()
    assert not caught.value.needs_person and "trying again" in caught.value.line
    fresh.delay = 0.0
    assert (await source.token()).value in fresh.tokens  # back by itself


async def test_a_wrong_client_secret_names_the_settings(fresh: FakeIdP, tmp_path: Path) -> None:
    source = _generic(fresh, tmp_path)
    fresh.clients["gen"].secret = "another"
    line = await _failure(source)
    assert "EMAIL_OAUTH_CLIENT_ID and EMAIL_OAUTH_CLIENT_SECRET" in line


# -- Microsoft 365 (MSAL over https) ------------------------------------------------------
def _microsoft(idp: FakeIdP, tmp_path: Path, **env: str) -> Settings:
    return _settings(
        tmp_path, EMAIL_OAUTH_PROVIDER="microsoft", EMAIL_OAUTH_TENANT="contoso.example",
        EMAIL_OAUTH_AUTHORITY=idp.base(tls=True), EMAIL_OAUTH_CLIENT_ID="ms-app", **env,
    )  # fmt: skip


async def test_microsoft_app_only_with_a_secret_then_without_consent(
    fresh: FakeIdP, tmp_path: Path, ca_bundle: None
) -> None:
    fresh.client("ms-app", secret=SECRET, mailbox="bot@localhost")
    source = token_source(_microsoft(fresh, tmp_path, EMAIL_OAUTH_CLIENT_SECRET=SECRET))
    assert source is not None
    token = await source.token()
    assert fresh.tokens[token.value].mailbox == "bot@localhost"
    fresh.clients["ms-app"].consented = False
    source = token_source(_microsoft(fresh, tmp_path, EMAIL_OAUTH_CLIENT_SECRET=SECRET))
    assert source is not None
    line = await _failure(source)
    assert "AADSTS65001" in line and "Grant admin consent" in line


async def test_microsoft_app_only_with_a_certificate(
    fresh: FakeIdP, tmp_path: Path, ca_bundle: None
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "switchboard")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ) + cert.public_bytes(serialization.Encoding.PEM)  # fmt: skip
    path = tmp_path / "app.pem"
    path.write_bytes(pem)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fresh.client("ms-app", public_key=public, mailbox="bot@localhost")
    source = token_source(_microsoft(fresh, tmp_path, EMAIL_OAUTH_CERT_FILE=str(path)))
    assert source is not None
    assert (await source.token()).value in fresh.tokens  # the assertion's signature checked


async def test_microsoft_delegated_uses_and_keeps_the_newest_refresh_token(
    fresh: FakeIdP, tmp_path: Path, ca_bundle: None
) -> None:
    fresh.client("ms-app", mailbox="bot@localhost")
    seed = fresh.refresh_token("ms-app", "bot@localhost")
    settings = _microsoft(fresh, tmp_path, EMAIL_OAUTH_REFRESH_TOKEN=seed)
    source = token_source(settings)
    assert source is not None
    await source.token()
    stored = settings.data_dir / STORE_NAME
    assert stored.stat().st_mode & 0o777 == 0o600
    newest = json.loads(stored.read_text())["refresh_token"]
    assert newest != seed and newest in fresh.refresh  # Microsoft rotated it; kept
    fresh.revoke_all("bot@localhost")  # an admin revoked the sessions
    source = token_source(settings)
    assert source is not None
    line = await _failure(source)
    assert "run `switchboard email login` again" in line and "AADSTS700082" in line


async def test_microsoft_delegated_before_any_login_says_to_log_in(
    fresh: FakeIdP, tmp_path: Path, ca_bundle: None
) -> None:
    fresh.client("ms-app", mailbox="bot@localhost")
    source = token_source(_microsoft(fresh, tmp_path))
    assert source is not None
    assert "run `switchboard email login` once" in await _failure(source)


# -- Google (google-auth) --------------------------------------------------------------
async def test_google_refresh_token_then_revoked(fresh: FakeIdP, tmp_path: Path) -> None:
    fresh.client("g-app", secret=SECRET, mailbox="bot@localhost")
    seed = fresh.refresh_token("g-app", "bot@localhost")
    settings = _settings(
        tmp_path, EMAIL_OAUTH_PROVIDER="google", EMAIL_OAUTH_CLIENT_ID="g-app",
        EMAIL_OAUTH_CLIENT_SECRET=SECRET, EMAIL_OAUTH_REFRESH_TOKEN=seed,
        EMAIL_OAUTH_TOKEN_URL=f"{fresh.base()}/google/token",
    )  # fmt: skip
    source = token_source(settings)
    assert source is not None
    # the 502 is this endpoint's own: no straggler of an earlier test can take it
    fresh.fail_next.append((502, "<html><body>Bad Gateway</body></html>", "/google/token"))
    with pytest.raises(SignInError, match="answered HTML, not a token") as caught:
        await source.token()
    assert not caught.value.needs_person
    token = await source.token()
    assert token.expires_at - token.fetched_at == pytest.approx(3600, abs=5)
    fresh.revoke_all("bot@localhost")
    source = token_source(settings)
    assert source is not None
    line = await _failure(source)
    assert "invalid_grant" in line and "EMAIL_OAUTH_REFRESH_TOKEN" in line


async def test_google_service_account_acts_as_the_mailbox_only_when_delegated(
    fresh: FakeIdP, tmp_path: Path
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()  # fmt: skip
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    sa = "mailer@project.iam.gserviceaccount.com"
    path = tmp_path / "sa.json"
    path.write_text(json.dumps({
        "type": "service_account", "client_email": sa, "private_key": private,
        "private_key_id": "k1", "client_id": "1234", "token_uri": f"{fresh.base()}/google/token",
    }))  # fmt: skip
    fresh.client(sa, public_key=public, mailbox="bot@localhost")
    settings = _settings(
        tmp_path, EMAIL_OAUTH_PROVIDER="google", EMAIL_OAUTH_SERVICE_ACCOUNT_FILE=str(path)
    )
    source = token_source(settings)
    assert source is not None
    token = await source.token()
    assert fresh.tokens[token.value].mailbox == "bot@localhost"
    fresh.clients[sa].mailbox = "other@localhost"  # no delegation for this mailbox
    source = token_source(settings)
    assert source is not None
    line = await _failure(source)
    assert "domain-wide delegation" in line and "Admin console" in line


# -- settings -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({}, "EMAIL_OAUTH_TOKEN_URL is required with EMAIL_AUTH=oauth2 (generic)"),
        ({"EMAIL_OAUTH_PROVIDER": "microsoft"}, "EMAIL_OAUTH_TENANT is required"),
        ({"EMAIL_OAUTH_PROVIDER": "google", "EMAIL_OAUTH_CLIENT_ID": "x",
          "EMAIL_OAUTH_CLIENT_SECRET": "y"}, "EMAIL_OAUTH_REFRESH_TOKEN is required"),
        ({"EMAIL_OAUTH_TOKEN_URL": "http://idp.example/token", "EMAIL_OAUTH_CLIENT_ID": "x",
          "EMAIL_OAUTH_CLIENT_SECRET": "y"}, "EMAIL_OAUTH_TOKEN_URL must be an https:// URL"),
        ({"EMAIL_AUTH": "password", "IMAP_USER": "bot"}, "IMAP_PASSWORD is required"),
    ],
)  # fmt: skip
def test_a_missing_oauth_setting_is_one_line_naming_it(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    with pytest.raises(SettingsError, match=says.replace("(", r"\(").replace(")", r"\)")):
        _settings(tmp_path, **env)


def test_a_token_never_shows_in_its_repr() -> None:
    token = Token("at-very-secret-value", time.time() + 60, time.time())
    assert "very-secret" not in repr(token) and "very-secret" not in str([token])
    assert oauth.REFRESH_MARGIN_SECONDS == 300.0


def test_msal_and_google_auth_load_only_for_their_provider(tmp_path: Path) -> None:
    probe = f"""
import asyncio, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from config.settings import load_settings
from channels.email.channel import EmailChannel
from channels.email.oauth_providers import token_source
env = {{"SWITCHBOARD_DATA_DIR": {str(tmp_path)!r}, "EMAIL_ADDRESS": "b@x.org",
       "EMAIL_AUTHSERV_ID": "mx", "IMAP_HOST": "h", "SMTP_HOST": "h", "EMAIL_AUTH": "oauth2",
       "EMAIL_OAUTH_TOKEN_URL": "https://idp.x.org/token", "EMAIL_OAUTH_CLIENT_ID": "c",
       "EMAIL_OAUTH_CLIENT_SECRET": "s"}}
token_source(load_settings(None, env))
print(sorted(m for m in ("msal", "google.auth", "requests") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_xoauth2_where_offered_else_oauthbearer_in_their_wire_forms() -> None:
    assert sasl.choose({"AUTH=XOAUTH2", "AUTH=OAUTHBEARER", "SASL-IR"}) == "XOAUTH2"
    assert sasl.choose({"AUTH=OAUTHBEARER", "AUTH=PLAIN"}) == "OAUTHBEARER"
    assert sasl.choose({"AUTH=PLAIN", "AUTH=LOGIN"}) is None
    assert base64.b64decode(sasl.initial_response("XOAUTH2", "b@x.org", "tk")) == (
        b"user=b@x.org\x01auth=Bearer tk\x01\x01"
    )
    assert base64.b64decode(sasl.initial_response("OAUTHBEARER", "a,b=c@x.org", "tk")) == (
        b"n,a=a=2Cb=3Dc@x.org,\x01auth=Bearer tk\x01\x01"  # RFC 7628 section 3.1
    )
    error = base64.b64encode(b'{"status":"401","schemes":"bearer","scope":"mail"}')
    assert oauth.server_error(error) == {"status": "401", "schemes": "bearer", "scope": "mail"}
    assert oauth.server_error(b"not base64 json") == {}
