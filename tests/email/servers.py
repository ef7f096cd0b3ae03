"""Real mail servers on 127.0.0.1 for the email tests.

`Dovecot` runs a private dovecot instance (IMAP with IDLE, LMTP delivery; plain,
STARTTLS and implicit TLS) from one config file in a temporary directory; any user
logs in with the password `secret`, so each test uses fresh addresses. `SmtpRelay` is
an aiosmtpd server in the test's own loop that hands every message to dovecot over
LMTP, as a real MTA would; it can refuse recipients with 4xx/5xx and be stopped and
started on the same port. Dovecot advertises no IDLE to clients of 127.0.0.2, for
the polling fallback. `stamp` adds what a receiving MX checking SPF and DMARC adds
(`Authentication-Results: mx.test; ...` above its `Received`), for mail sent to the
bot. `person.Person` reads and writes a mailbox like a mail client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import smtplib
import socket
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.fakes.kept import Kept

PASSWORD = "secret"
#: the authserv-id of the receiving MX in front of the bot's mailbox
MX = "mx.test"

CONFIG = """\
protocols = imap lmtp
listen = 127.0.0.1
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
info_log_path = {base}/dovecot.log
ssl = yes
ssl_cert = <{base}/cert.pem
ssl_key = <{base}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 8
mail_location = maildir:~/Maildir
# a test server: its own disk durability is not under test, and fsync slows every delivery
mail_fsync = never
# IDLE learns of new mail by inotify; where a machine's inotify instances run out
# (shared by every process of the uid), dovecot falls back to looking every 30 s
mailbox_idle_check_interval = 1 secs
passdb {{
  driver = static
  args = password={password}
}}
userdb {{
  driver = static
  args = uid=8 gid=8 home={base}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1, 127.0.0.2
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp}
  }}
}}
protocol lmtp {{
  postmaster_address = postmaster@localhost
}}
local 127.0.0.2 {{
  protocol imap {{
    imap_capability = IMAP4rev1 LITERAL+ UIDPLUS
  }}
}}
"""


def stamp(data: bytes, envelope_from: str, mx: str = MX) -> bytes:
    """`data` as a receiving MX (Postfix + OpenDMARC, rspamd) hands it on: SPF passes
    for the envelope sender (the client may send for its own domain), no DKIM
    signature is checked, DMARC passes when From's domain is the SPF domain. Headers
    the sender wrote, Authentication-Results included, stay below, untouched."""
    import email as mail
    import email.policy
    import email.utils

    try:
        parsed = mail.message_from_bytes(data, policy=email.policy.default)
        from_domain = parsed["From"].addresses[0].domain.lower()
    except Exception:  # no From, or one OpenDMARC could not read either
        from_domain = ""
    spf_domain = envelope_from.rpartition("@")[2].lower()
    spf = f"spf=pass smtp.mailfrom={envelope_from}" if envelope_from else "spf=none"
    dmarc = "pass" if from_domain and from_domain == spf_domain else "fail"
    date = email.utils.formatdate()
    return (
        f"Authentication-Results: {mx};\n\t{spf};\n\tdkim=none (no signature);\n"
        f"\tdmarc={dmarc} (p=reject) header.from={from_domain or 'unknown'}\n"
        f"Received: from client.test (client.test [192.0.2.1]) by {mx} with ESMTP; {date}\n"
    ).encode() + data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(parent: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"  # a zombie is dead, only not yet reaped


def wait_port(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Dovecot:
    """A private dovecot: `start()`, `stop()`, `restart()`; its ports and CA."""

    def __init__(self, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="dc"))  # short: unix socket paths
        self.base.chmod(0o755)
        self.imap, self.imaps, self.lmtp = free_port(), free_port(), free_port()
        (self.base / "mail").mkdir()
        shutil.chown(self.base / "mail", "mail", "mail")
        (self.base / "cert.pem").write_bytes(cert_pem)
        (self.base / "key.pem").write_bytes(key_pem)
        self.ca_file = self.base / "ca.pem"
        self.ca_file.write_bytes(ca_pem)
        self.config = self.base / "dovecot.conf"
        self.config.write_text(
            CONFIG.format(
                base=self.base, password=PASSWORD, imap=self.imap, imaps=self.imaps, lmtp=self.lmtp
            )
        )

    def start(self) -> None:
        subprocess.run(["dovecot", "-c", str(self.config)], check=True)
        wait_port(self.imap)
        wait_port(self.imaps)
        wait_port(self.lmtp)

    def stop(self) -> None:
        subprocess.run(["dovecot", "-c", str(self.config), "stop"], check=False)
        deadline = time.monotonic() + 10
        while (self.base / "run" / "master.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def family(self) -> list[int]:
        """The master's pid and those of every process it started."""
        master = int((self.base / "run" / "master.pid").read_text().split()[0])
        return [master, *_children(master)]

    def freeze(self) -> None:
        """SIGSTOP the master and every process it started: the sockets stay open, the
        kernel still accepts connections, nothing answers (a hung server or host)."""
        self._signal(self.family(), signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(self.family()[::-1], signal.SIGCONT)

    @staticmethod
    def _signal(pids: list[int], signum: signal.Signals) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def crash(self) -> None:
        """SIGKILL the master and every process it started: connections drop at once,
        as when the server's machine or container goes away."""
        pid_file = self.base / "run" / "master.pid"
        family = self.family()
        self._signal(family, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in family) and time.monotonic() < deadline:
            time.sleep(0.02)
        pid_file.unlink(missing_ok=True)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def log(self) -> str:
        path = self.base / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    async def logged(self, line: str, timeout: float = 5.0) -> bool:
        """Whether `line` reaches the log within `timeout`: dovecot's log process writes
        a moment after the client already has its answer."""
        deadline = time.monotonic() + timeout
        while line not in self.log():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def deliver(self, sender: str, recipients: list[str], data: bytes) -> dict[str, Any]:
        """Deliver over LMTP, as an MTA does; returns the refused recipients."""
        with smtplib.LMTP("127.0.0.1", self.lmtp) as lmtp:
            return lmtp.sendmail(sender, recipients, data)

    def env(self, address: str, smtp_port: int, allowed: str = "") -> dict[str, str]:
        """The bot's email settings for `address` against this server and a relay."""
        return {
            "EMAIL_ADDRESS": address,
            "EMAIL_ALLOWED_SENDERS": allowed,
            "EMAIL_AUTHSERV_ID": MX,
            "IMAP_HOST": "127.0.0.1",
            "IMAP_PORT": str(self.imap),
            "IMAP_USER": address,
            "IMAP_PASSWORD": PASSWORD,
            "IMAP_TLS": "none",
            "SMTP_HOST": "127.0.0.1",
            "SMTP_PORT": str(smtp_port),
            "SMTP_TLS": "none",
        }


@dataclass
class Refusal:
    code: int
    text: str


@dataclass
class RelayHandler:
    """aiosmtpd handler: refuse scripted recipients, else deliver into dovecot by LMTP."""

    dovecot: Dovecot
    refuse: dict[str, Refusal] = field(default_factory=dict)
    accepted: Kept[Envelope] = field(default_factory=Kept)  # every one, unless bounded
    deliver: bool = True
    hold: float = 0.0  # seconds each DATA takes, to make sessions overlap
    mx: bool = False  # act as the receiving MX too: `stamp` every mail it delivers
    sessions: int = 0  # in DATA now
    most_sessions: int = 0

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        refusal = self.refuse.get(address.lower())
        if refusal is not None:
            return f"{refusal.code} {refusal.text}"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.sessions += 1
        self.most_sessions = max(self.most_sessions, self.sessions)
        try:
            await asyncio.sleep(self.hold)
            data = envelope.original_content or b""
            if self.mx:
                data = stamp(data, envelope.mail_from or "")
            if self.deliver:
                sender = envelope.mail_from or ""
                await asyncio.to_thread(self.dovecot.deliver, sender, list(envelope.rcpt_tos), data)
            self.accepted.append(envelope)
            return "250 Message accepted"
        finally:
            self.sessions -= 1


class SmtpRelay:
    """aiosmtpd in the running loop; `tls` is None, "starttls" or "ssl"."""

    def __init__(
        self,
        handler: RelayHandler,
        tls: str | None = None,
        context: ssl.SSLContext | None = None,
        port: int | None = None,
    ) -> None:
        self.handler = handler
        self.tls = tls
        self.context = context
        self.port = port or free_port()
        self.server: asyncio.base_events.Server | None = None

    def _protocol(self) -> SMTP:
        starttls = self.context if self.tls == "starttls" else None
        return SMTP(
            self.handler,
            hostname="localhost",
            tls_context=starttls,
            require_starttls=starttls is not None,
            auth_require_tls=False,
            auth_exclude_mechanism=["CRAM-MD5"],
            authenticator=_accept_any,
        )

    async def start(self) -> SmtpRelay:
        loop = asyncio.get_running_loop()
        ssl_ctx = self.context if self.tls == "ssl" else None
        self.server = await loop.create_server(
            self._protocol, "127.0.0.1", self.port, ssl=ssl_ctx, reuse_address=True
        )
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None


def _accept_any(*args: Any) -> Any:
    from aiosmtpd.smtp import AuthResult

    return AuthResult(success=True)


def make_ca() -> tuple[bytes, bytes, bytes]:
    """A throwaway CA and a cert for 127.0.0.1/localhost: (ca, cert chain, key)."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1", "127.0.0.2")
    chain = b"".join(blob.bytes() for blob in cert.cert_chain_pems)
    return ca.cert_pem.bytes(), chain, cert.private_key_pem.bytes()


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
        cert.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
    return ctx
