"""Outbound SMTP with aiosmtplib, errors mapped at the edge for the outbox.

A 4xx answer, a refused or dropped connection and a timeout are transient: the
outbox retries with backoff until the mail is delivered. A 5xx answer is permanent:
the outbox records it and reports it to the home target.

With EMAIL_AUTH=oauth2 each session signs in with an access token (XOAUTH2, else
OAUTHBEARER); a refused token is dropped and one fresh token tried. A sign-in that
still fails is transient for the outbox (the mail waits, it is not given up) and is
kept in `problem`, the one line the channel's health shows until a mail goes out.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from email.message import EmailMessage

import aiosmtplib

from bot.seam import PermanentDeliveryError, TransientDeliveryError
from channels.email import oauth_errors
from channels.email.oauth import SignInError, TokenSource, server_error
from channels.email.sasl import MECHANISMS, initial_response
from channels.email.tls import client_context, port_for
from config.settings import Settings

TIMEOUT_SECONDS = 30.0
#: SMTP sessions open at once. The outbox delivers to every address concurrently;
#: servers cap connections per client (Postfix: 50) and a burst of hundreds overflows
#: the listen backlog, so mails would wait out connect timeouts instead.
MAX_SESSIONS = 8
AUTH_CONTINUE, AUTH_OK = 334, 235

log = logging.getLogger(__name__)


class SmtpSender:
    def __init__(self, settings: Settings, tokens: TokenSource | None = None) -> None:
        self.settings = settings
        self.tokens = tokens
        self.problem: str | None = None  # the last sign-in failure, until a mail goes out
        self.host = settings.smtp_host or "localhost"
        self.tls = settings.smtp_tls
        self.port = port_for("smtp", self.tls, settings.smtp_port)
        self.user = settings.smtp_user
        password = settings.smtp_password
        self.password = password.get_secret_value() if password is not None else None
        self.context = client_context(settings.email_tls_ca_file) if self.tls != "none" else None
        self.sessions = asyncio.Semaphore(MAX_SESSIONS)

    async def send(self, mail: EmailMessage, sender: str, recipients: list[str]) -> None:
        async with self.sessions:
            await self._send(mail, sender, recipients)

    async def _send(self, mail: EmailMessage, sender: str, recipients: list[str]) -> None:
        try:
            if self.tokens is not None:
                await self._send_signed(self.tokens, mail, sender, recipients)
                self.problem = None
                return
            await aiosmtplib.send(
                mail,
                sender=sender,
                recipients=recipients,
                hostname=self.host,
                port=self.port,
                username=self.user,
                password=self.password if self.user else None,
                use_tls=self.tls == "ssl",
                start_tls=self.tls == "starttls",
                tls_context=self.context,
                timeout=TIMEOUT_SECONDS,
            )
        except SignInError as exc:
            self.problem = f"email sign-in failed: SMTP: {exc.line}"
            log.log(logging.ERROR if exc.needs_person else logging.WARNING, "%s", self.problem)
            raise TransientDeliveryError(self.problem) from None
        except aiosmtplib.SMTPRecipientsRefused as exc:
            refused = "; ".join(f"{r.code} {r.message} ({r.recipient})" for r in exc.recipients)
            raise _by_code([r.code for r in exc.recipients], f"SMTP {refused}") from exc
        except aiosmtplib.SMTPResponseException as exc:
            raise _by_code([exc.code], f"SMTP {exc.code} {exc.message}") from exc
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise TransientDeliveryError(
                f"SMTP {self.host}:{self.port} unreachable: {type(exc).__name__}: {exc}"
            ) from exc

    async def _send_signed(
        self, tokens: TokenSource, mail: EmailMessage, sender: str, recipients: list[str]
    ) -> None:
        smtp = aiosmtplib.SMTP(
            hostname=self.host, port=self.port, use_tls=self.tls == "ssl",
            start_tls=self.tls == "starttls", tls_context=self.context, timeout=TIMEOUT_SECONDS,
        )  # fmt: skip
        async with smtp:
            await self._sign_in(smtp, tokens)
            await smtp.send_message(mail, sender=sender, recipients=recipients)

    async def _sign_in(self, smtp: aiosmtplib.SMTP, tokens: TokenSource) -> None:
        """AUTH with a token; once more with a fresh one; else a SignInError."""
        await smtp.ehlo()
        offered = [m.upper() for m in smtp.server_auth_methods]
        mechanism = next((m for m in MECHANISMS if m in offered), None)
        if mechanism is None:
            raise oauth_errors.no_mechanism("SMTP", self.host, " ".join(offered))
        user = self.user or self.settings.email_address or ""
        said, status = "", ""
        for _ in range(2):
            token = await tokens.token()
            initial = initial_response(mechanism, user, token.value)
            answer = await smtp.execute_command(b"AUTH", mechanism.encode(), initial)
            if answer.code == AUTH_CONTINUE:  # a JSON error: reply so the server says no
                status = server_error(answer.message.encode()).get("status", "")
                abort = b"" if mechanism == "XOAUTH2" else base64.b64encode(b"\x01")
                answer = await smtp.execute_command(abort)
            if answer.code == AUTH_OK:
                return
            if 400 <= answer.code < 500:  # the server's trouble, not the token's
                raise SignInError(f"SMTP AUTH {answer.code} {answer.message}", False)
            tokens.refused(token)
            said = f"{answer.code} {answer.message}"
        raise oauth_errors.server_refused(
            "SMTP", user, self.settings.email_oauth_provider, self.settings.oauth_delegated,
            said, status,
        )  # fmt: skip


def _by_code(codes: list[int], text: str) -> Exception:
    """Permanent only when every answer was a 5xx; anything else may pass later."""
    if codes and all(500 <= code < 600 for code in codes):
        return PermanentDeliveryError(text)
    return TransientDeliveryError(text)
