"""TLS settings shared by the IMAP and SMTP connections: `ssl`, `starttls`, `none`.

Certificates are always verified: against EMAIL_TLS_CA_FILE when set (a private
mail server's CA), else the system's store.
"""

from __future__ import annotations

import ssl
from pathlib import Path

DEFAULT_PORTS = {
    "imap": {"ssl": 993, "starttls": 143, "none": 143},
    "smtp": {"ssl": 465, "starttls": 587, "none": 25},
}


def client_context(ca_file: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)


def port_for(protocol: str, tls: str, port: int | None) -> int:
    return port if port is not None else DEFAULT_PORTS[protocol][tls]
