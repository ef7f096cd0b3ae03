"""The store's audit table: append-only lines of who did what, never message content.

Part of the store (the only code that speaks SQL): `Store.audit` is one of these. The
table itself (bot/store/schema.py) refuses UPDATE and DELETE with triggers, so a line once
written stays; `bot/ledger/audit.py` decides what becomes a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.store.schema import AUDIT_FIELDS, AuditLine, decode_audit

if TYPE_CHECKING:
    from bot.store.core import Store

_INSERT = (
    f"INSERT INTO audit ({', '.join(AUDIT_FIELDS)}) VALUES ({', '.join('?' * len(AUDIT_FIELDS))})"
)
_SELECT = f"SELECT seq, {', '.join(AUDIT_FIELDS)} FROM audit"


class AuditRows:
    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, fields: dict[str, Any]) -> None:
        """One line; `fields` holds some of AUDIT_FIELDS (`at`, `type`, `agent` at least)."""
        self.store.execute(_INSERT, tuple(fields.get(name) for name in AUDIT_FIELDS))

    def since(self, at: float, limit: int = 10_000) -> list[AuditLine]:
        """Lines from `at` on, oldest first (the newest `limit` of them)."""
        rows = self.store.execute(
            f"SELECT * FROM ({_SELECT} WHERE at >= ? ORDER BY seq DESC LIMIT ?) AS recent"
            " ORDER BY seq",
            (at, limit),
        )
        return self.store.decode("audit", rows, decode_audit)
