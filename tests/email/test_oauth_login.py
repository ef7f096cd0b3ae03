"""`switchboard email login`: the device code flow with the real MSAL against the fake
identity provider over https (a local CA): the command prints the page and the code,
polls while the person signs in, and stores the refresh token (mode 0600); the bot
then signs in to dovecot as that person's mailbox, with no password and no secret."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from bot.cli import main
from channels.email.imap_client import ImapClient
from channels.email.login import login
from channels.email.oauth import STORE_NAME
from channels.email.oauth_providers import token_source
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import eventually
from tests.kits.oauth_kit import OAuthWorld


@pytest.fixture
def ca_bundle(
    tls_material: tuple[bytes, bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ca.pem"
    path.write_bytes(tls_material[0])
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(path))


async def test_device_code_login_stores_a_refresh_token_the_bot_signs_in_with(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld, ca_bundle: None
) -> None:
    oauth.idp.client("person-app", mailbox="")  # a public client: no secret
    settings = oauth.settings(
        tmp_path, fake, EMAIL_OAUTH_PROVIDER="microsoft", EMAIL_OAUTH_TENANT="contoso.example",
        EMAIL_OAUTH_AUTHORITY=oauth.idp.base(tls=True), EMAIL_OAUTH_CLIENT_ID="person-app",
        EMAIL_OAUTH_CLIENT_SECRET="",
    )  # fmt: skip
    assert settings.oauth_delegated
    lines: list[str] = []
    running = asyncio.create_task(asyncio.to_thread(login, settings, lines.append))
    await eventually(lambda: bool(lines), 15)
    code = re.search(r"enter the code (\w+)", lines[0])
    assert code is not None and "https://microsoft.com/devicelogin" in lines[0]
    await asyncio.sleep(1.5)  # the command polls; the person is still typing
    assert not running.done()
    oauth.idp.approve(code.group(1), oauth.bot)  # the person signs in as the mailbox
    assert await asyncio.wait_for(running, 20) == 0
    stored = settings.data_dir / STORE_NAME
    assert stored.stat().st_mode & 0o777 == 0o600 and "Signed in" in lines[-1]
    client = ImapClient(settings, asyncio.Event(), token_source(settings))
    await client.connect()
    await client.close()
    assert await oauth.dovecot.logged(f"user=<{oauth.bot}>, method=XOAUTH2")


def test_login_for_a_provider_without_a_device_flow_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "SWITCHBOARD_DATA_DIR": str(tmp_path), "EMAIL_ADDRESS": "bot@example.com",
        "EMAIL_AUTHSERV_ID": "mx.test", "IMAP_HOST": "imap.example.com",
        "SMTP_HOST": "smtp.example.com", "EMAIL_AUTH": "oauth2",
        "EMAIL_OAUTH_PROVIDER": "google", "EMAIL_OAUTH_CLIENT_ID": "x",
        "EMAIL_OAUTH_CLIENT_SECRET": "y", "EMAIL_OAUTH_REFRESH_TOKEN": "z",
    }  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["email", "login"]) == 2
    assert "EMAIL_OAUTH_REFRESH_TOKEN" in capsys.readouterr().out
