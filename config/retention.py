"""How long the data dir keeps what has served its purpose (bot/store/prune.py prunes it).

`SWITCHBOARD_RETENTION` (default 90 days): handled inbound messages, sent outbox rows and
their attempts, finished workers and their questions, settled approvals, trigger runs,
usage detail (kept as daily sums), quarantined rows, rotated event logs and archived
transcripts. `SWITCHBOARD_AUDIT_RETENTION` (default 365 days): the audit log, by age only.
A value is a duration: `90d`, `12h`, `30m`, or a plain number of days (`90`).
`Settings` (config/settings.py) takes these fields. Imports nothing of the project but config.
"""

from __future__ import annotations

from croniter import croniter
from pydantic import BaseModel, Field, field_validator

from config.entries import duration

DAY = 86_400.0


def retention(value: object) -> float:
    """Seconds from `90` (days), `90d`, `12h`, `30m` or `45s`: more than zero."""
    text = str(value).strip().lower()
    try:
        days = float(text)
    except ValueError:
        pass
    else:
        if days <= 0:
            raise ValueError("must be more than zero (a number of days, or e.g. 90d, 12h)")
        return days * DAY
    try:
        return duration(text)
    except ValueError:
        raise ValueError("must be a duration: days (90), or a number with d, h, m or s") from None


class RetentionSettings(BaseModel):
    #: seconds once read; what has served its purpose is pruned once older than this
    #: (the defaults are read as the settings are: a plain number is days)
    retention: float = 90
    #: seconds once read; the audit log is pruned by age only
    audit_retention: float = 365
    #: events.jsonl is rotated past this size, keeping this many old files
    events_max_bytes: int = Field(default=64 * 1024 * 1024, ge=64 * 1024)
    events_keep: int = Field(default=5, ge=1)
    #: when the leader prunes (and checkpoints the SQLite WAL)
    prune_cron: str = "*/10 * * * *"

    _retention = field_validator("retention", "audit_retention", mode="before")(
        lambda v: retention(v)
    )

    @field_validator("prune_cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError("must be a 5-field cron expression, e.g. '*/10 * * * *'")
        return value
