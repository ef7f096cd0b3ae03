"""The store's audit table: append-only lines of who did what, never message content.

Part of the store (the only code that speaks SQL): `Store.audit` is one of these. The
table itself (bot/store/schema.py) refuses UPDATE and DELETE with triggers, so a line once
written stays; `bot/ledger/audit.py` decides what becomes a line.
"""

from __future__ import annotations

from typing import Any

from bot.store.schema import AUDIT_FIELDS, AuditLine, decode_audit
from bot.store.sql import Sql

_INSERT = (
    f"INSERT INTO audit ({', '.join(AUDIT_FIELDS)}) VALUES ({', '.join('?' * len(AUDIT_FIELDS))})"
)
_SELECT = f"SELECT seq, {', '.join(AUDIT_FIELDS)} FROM audit"


class AuditRows:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def add(self, fields: dict[str, Any]) -> None:
        """One line; `fields` holds some of AUDIT_FIELDS (`at`, `type`, `agent` at least)."""
        self.sql.execute(_INSERT, tuple(fields.get(name) for name in AUDIT_FIELDS))

    def since(self, at: float, limit: int = 10_000) -> list[AuditLine]:
        """Lines from `at` on, oldest first (the newest `limit` of them)."""
        rows = self.sql.execute(
            f"SELECT * FROM ({_SELECT} WHERE at >= ? ORDER BY seq DESC LIMIT ?) AS recent"
            " ORDER BY seq",
            (at, limit),
        )
        return self.sql.decode("audit", rows, decode_audit)
