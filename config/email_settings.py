"""The email channel's settings: the bot's address, who may write, whose mail server's
verdict counts, and the IMAP and SMTP servers (how it signs in: config/email_auth.py).
A part of `Settings` (config/settings.py), as the roles' settings are."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

from config.mail import Hops


class EmailSettings(BaseModel):
    email_address: str | None = None
    email_allowed_senders: list[str] = Field(default_factory=list)
    # whose Authentication-Results count, how far down, and what unverified mail is
    # (config/mail.py: filled in for Gmail and Microsoft 365; required unless accept)
    email_authserv_id: str | None = None
    email_authserv_hops: Hops | None = None
    email_unverified: Literal["refuse", "accept"] = "refuse"
    imap_host: str | None = None
    imap_port: int | None = Field(default=None, ge=1, le=65535)
    imap_user: str | None = None
    imap_password: SecretStr | None = None
    imap_tls: Literal["ssl", "starttls", "none"] = "ssl"
    smtp_host: str | None = None
    smtp_port: int | None = Field(default=None, ge=1, le=65535)
    smtp_user: str | None = None
    smtp_password: SecretStr | None = None
    smtp_tls: Literal["ssl", "starttls", "none"] = "starttls"
    imap_mailbox: str = "INBOX"
    # a sync at the latest this often (the IDLE itself ends every CHECK_SECONDS, 7 s)
    imap_idle_seconds: float = Field(default=25 * 60, gt=0, le=29 * 60)
    imap_poll_seconds: float = Field(default=60.0, gt=0)
    email_tls_ca_file: Path | None = None
    email_max_chars: int = Field(default=20_000, ge=200)
    email_max_bytes: int = Field(default=10_000_000, ge=10_000)
    email_max_per_sender_per_hour: int = Field(default=60, ge=1)

    @field_validator("email_allowed_senders")
    @classmethod
    def _lower(cls, value: list[str]) -> list[str]:
        return [v.lower() for v in value]
