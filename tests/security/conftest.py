"""The security tests play attackers against the real kits: the email tests' mail world
(dovecot and the relay; dovecot itself is one per session, tests/kits/mail_kit.py)."""

from tests.email.conftest import world  # noqa: F401  (a fixture of the email room)
