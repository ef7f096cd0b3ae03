"""The online checks of `switchboard doctor`: each configured channel's sign-in (Slack
`auth.test` and the scopes the app lacks, Discord `GET /users/@me`, IMAP and SMTP
login) and the model (a one-token call through the anthropic SDK). Each SDK is imported
only when its channel is configured. Every probe is bounded by TIMEOUT seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agents.model.reasons import explain
from bot.setup.doctor import Check, failed, passed
from bot.setup.manifest import BOT_SCOPES
from config.settings import Settings

TIMEOUT = 15.0


async def probe_all(settings: Settings) -> list[Check]:
    probes: list[Callable[[Settings], Awaitable[list[Check]]]] = []
    if settings.slack_enabled:
        probes.append(slack)
    if settings.discord_enabled:
        probes.append(discord)
    if settings.email_enabled:
        probes.append(email)
    probes.append(model)
    results = await asyncio.gather(*(_bounded(p, settings) for p in probes))
    return [check for checks in results for check in checks]


async def _bounded(
    probe: Callable[[Settings], Awaitable[list[Check]]], settings: Settings
) -> list[Check]:
    try:
        return await asyncio.wait_for(probe(settings), TIMEOUT)
    except TimeoutError:
        name = probe.__name__
        return [failed(name, f"no answer within {TIMEOUT:.0f}s", "check the network")]


async def model(settings: Settings) -> list[Check]:
    from agents.model.providers import ANTHROPIC, split

    provider, _ = split(settings.model)
    if provider != ANTHROPIC:  # the one-token call speaks Anthropic's API only
        return [passed("model", f"{settings.model} (not signed in here: first use tells)")]
    import anthropic

    key = settings.anthropic_api_key
    client = anthropic.AsyncAnthropic(
        api_key=key.get_secret_value() if key else "none",
        base_url=settings.anthropic_base_url,
        max_retries=0,
        timeout=TIMEOUT,
    )
    try:
        await client.messages.create(
            model=settings.model,
            max_tokens=1,
            messages=[{"role": "user", "content": "ping"}],
        )
    except anthropic.NotFoundError:
        return [
            failed(
                "model",
                f"{client.base_url} does not know the model {settings.model}",
                "set SWITCHBOARD_MODEL to a model your key may use (docs/models.md)",
            )
        ]
    except anthropic.APIError as exc:
        reason = explain(exc, str(client.base_url))
        fix = (
            "set ANTHROPIC_API_KEY to a valid key"
            if "ANTHROPIC_API_KEY" in reason
            else "check ANTHROPIC_BASE_URL and the network"
        )
        return [failed("model", reason, fix)]
    finally:
        await client.close()
    return [passed("model", f"{settings.model} answers at {client.base_url}")]


async def slack(settings: Settings) -> list[Check]:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    assert settings.slack_bot_token is not None
    client = AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url
    )
    try:
        answer = await client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error", "refused")
        return [
            failed(
                "slack",
                f"SLACK_BOT_TOKEN was refused ({error})",
                "copy the Bot User OAuth Token (xoxb-…) from the app's Install App page",
            )
        ]
    except Exception as exc:  # the network, TLS, a wrong SLACK_API_URL
        return [failed("slack", _unreachable(settings.slack_api_url, exc), "check SLACK_API_URL")]
    who = f"@{answer.get('user')} in {answer.get('team')}"
    checks = [passed("slack", f"signed in as {who}"), _scopes(answer.headers)]
    if settings.slack_app_token is not None:
        checks.append(await _app_token(settings, AsyncWebClient, SlackApiError))
    return checks


def _scopes(headers: dict[str, Any]) -> Check:
    raw = next((v for k, v in headers.items() if k.lower() == "x-oauth-scopes"), None)
    if raw is None:
        return failed("slack scopes", "Slack did not list the token's scopes", "reinstall the app")
    have = {s.strip() for s in str(raw).split(",") if s.strip()}
    missing = [s for s in BOT_SCOPES if s not in have]
    if missing:
        return failed(
            "slack scopes",
            f"the app lacks {', '.join(missing)}",
            "add them (the manifest in docs/slack.md, or `switchboard init` prints it), "
            "then reinstall the app",
        )
    return passed("slack scopes", f"all {len(BOT_SCOPES)} the bot uses")


async def _app_token(settings: Settings, client_type: Any, error_type: Any) -> Check:
    assert settings.slack_app_token is not None
    client = client_type(base_url=settings.slack_api_url)
    try:
        await client.apps_connections_open(app_token=settings.slack_app_token.get_secret_value())
    except error_type as exc:
        error = exc.response.get("error", "refused")
        return failed(
            "slack socket mode",
            f"SLACK_APP_TOKEN was refused ({error})",
            "generate an app-level token with connections:write (Basic Information)",
        )
    return passed("slack socket mode", "the app-level token opens a connection")


async def discord(settings: Settings) -> list[Check]:
    import aiohttp

    assert settings.discord_bot_token is not None
    url = settings.discord_api_url.rstrip("/") + "/users/@me"
    headers = {"Authorization": f"Bot {settings.discord_bot_token.get_secret_value()}"}
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(url, headers=headers) as response,
        ):
            body = await response.json(content_type=None) if response.status < 500 else {}
            status = response.status
    except (aiohttp.ClientError, OSError) as exc:
        return [failed("discord", _unreachable(url, exc), "check DISCORD_API_URL")]
    if status == 401:
        return [
            failed(
                "discord",
                "DISCORD_BOT_TOKEN was refused (401 Unauthorized)",
                "reset the token on the Bot page of the Developer Portal and copy it",
            )
        ]
    if status != 200:
        return [failed("discord", f"{url} answered HTTP {status}", "try again later")]
    return [passed("discord", f"signed in as {body.get('username')}")]


async def email(settings: Settings) -> list[Check]:
    return [await _imap(settings), await _smtp(settings)]


async def _imap(settings: Settings) -> Check:
    from channels.email.imap_client import ImapClient

    client = ImapClient(settings, asyncio.Event())
    where = f"{client.host}:{client.port}"
    try:
        await client.connect()
    except Exception as exc:
        return failed(
            "imap",
            f"cannot sign in at {where}: {_reason(exc)}",
            "check IMAP_HOST, IMAP_PORT, IMAP_TLS, IMAP_USER and IMAP_PASSWORD",
        )
    finally:
        await client.close()
    return passed("imap", f"signed in at {where} as {settings.imap_user}")


async def _smtp(settings: Settings) -> Check:
    import aiosmtplib

    from channels.email.smtp import SmtpSender

    sender = SmtpSender(settings)
    where = f"{sender.host}:{sender.port}"
    smtp = aiosmtplib.SMTP(
        hostname=sender.host,
        port=sender.port,
        use_tls=sender.tls == "ssl",
        start_tls=sender.tls == "starttls",
        tls_context=sender.context,
        timeout=TIMEOUT,
    )
    try:
        await smtp.connect()
        if sender.user:
            await smtp.login(sender.user, sender.password or "")
        await smtp.quit()
    except Exception as exc:
        return failed(
            "smtp",
            f"cannot sign in at {where}: {_reason(exc)}",
            "check SMTP_HOST, SMTP_PORT, SMTP_TLS, SMTP_USER and SMTP_PASSWORD",
        )
    signed = f" as {sender.user}" if sender.user else " (no login)"
    return passed("smtp", f"connected to {where}{signed}")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unreachable(url: str, exc: BaseException) -> str:
    return f"cannot reach {url}: {_reason(exc)}"
