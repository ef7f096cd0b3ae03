"""The security tests play attackers against the real kits: the email tests' dovecot,
relay and addresses (one dovecot for the session)."""

from tests.email.conftest import dovecot, tls_material, world  # noqa: F401
