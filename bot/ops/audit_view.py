"""The dashboard's /audit page: the audit log (bot/ledger/audit.py), newest first.

`?since=` takes the CLI's durations (30m, 2h, 3d; default the last day); a bad one
says so and shows the default. Every cell goes through the page's escaping.
"""

from __future__ import annotations

from bot.ledger.audit import HEADERS, describe, parse_duration, recent
from bot.ops.html import Markup, esc, link, section, table
from bot.store.core import Store

DEFAULT_SINCE = "1d"
SHOWN = 500
CHOICES = ("1h", "1d", "7d", "30d")


def audit_page(store: Store, since: str | None) -> Markup:
    problem = Markup("")
    since = since or DEFAULT_SINCE
    try:
        parse_duration(since)
    except ValueError as exc:
        problem, since = Markup(f'<p class="error">{esc(exc)}</p>'), DEFAULT_SINCE
    lines = recent(store, since)[-SHOWN:][::-1]
    rows = [describe(line) for line in lines]
    choices = Markup(" ").join(link("/audit", f"last {c}", since=c) for c in CHOICES)
    body = problem + Markup(f"<p>{choices}</p>") + table(HEADERS, rows, "no audit lines")
    return section(f"Audit log, last {since} ({len(rows)} lines, newest first)", body)
