"""Outbound SMTP with aiosmtplib, errors mapped at the edge for the outbox.

A 4xx answer, a refused or dropped connection and a timeout are transient: the
outbox retries with backoff until the mail is delivered. A 5xx answer is permanent:
the outbox records it and reports it to the home target.
"""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

import aiosmtplib

from bot.seam import PermanentDeliveryError, TransientDeliveryError
from channels.email.tls import client_context, port_for
from config.settings import Settings

TIMEOUT_SECONDS = 30.0
#: SMTP sessions open at once. The outbox delivers to every address concurrently;
#: servers cap connections per client (Postfix: 50) and a burst of hundreds overflows
#: the listen backlog, so mails would wait out connect timeouts instead.
MAX_SESSIONS = 8


class SmtpSender:
    def __init__(self, settings: Settings) -> None:
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
        except aiosmtplib.SMTPRecipientsRefused as exc:
            refused = "; ".join(f"{r.code} {r.message} ({r.recipient})" for r in exc.recipients)
            raise _by_code([r.code for r in exc.recipients], f"SMTP {refused}") from exc
        except aiosmtplib.SMTPResponseException as exc:
            raise _by_code([exc.code], f"SMTP {exc.code} {exc.message}") from exc
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise TransientDeliveryError(
                f"SMTP {self.host}:{self.port} unreachable: {type(exc).__name__}: {exc}"
            ) from exc


def _by_code(codes: list[int], text: str) -> Exception:
    """Permanent only when every answer was a 5xx; anything else may pass later."""
    if codes and all(500 <= code < 600 for code in codes):
        return PermanentDeliveryError(text)
    return TransientDeliveryError(text)
