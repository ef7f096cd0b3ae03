"""One dovecot for the session, with TLS from a test CA: the fixtures `tls_material` and
`dovecot`, registered for every test in tests/conftest.py (the email tests, the chaos
harness). Each test takes addresses of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.email.servers import Dovecot, make_ca


@pytest.fixture(scope="session")
def tls_material() -> tuple[bytes, bytes, bytes]:
    return make_ca()


@pytest.fixture(scope="session")
def dovecot(tls_material: tuple[bytes, bytes, bytes]) -> Iterator[Dovecot]:
    server = Dovecot(*tls_material)
    server.start()
    yield server
    server.cleanup()
