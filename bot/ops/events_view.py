"""The dashboard's events: the overview's recent events and the /events page.

Each event reads as when, type, who and what (bot/ops/event_text.py), never as JSON.
/events filters by type (a prefix: `tool` is every `tool.*`) and agent with a GET
form; the filter reads the log backwards from the end (bot/ops/tail.py) and stops at
SCAN_LIMIT events, offering the older rest as a link. A run of GROUP_AT or more events
of one agent in a row folds into one line: "Alice: 37 tool calls, 12:01 to 12:09".
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from bot.core.events import Event, parse_line
from bot.ops.event_text import plural, what
from bot.ops.html import Markup, esc, link, section, when
from bot.ops.tail import scan_back, tail
from bot.ops.views import worker_names

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from bot.ops.desk import OpsView


EVENTS_ON_OVERVIEW = 30
EVENTS_PAGE = 100
SCAN_LIMIT = 10_000
SCAN_STEP = 5000
GROUP_AT = 4
#: the types offered as one-click filters (each a prefix: `tool` is `tool.*`)
KINDS = ("message", "tool", "worker", "human", "llm", "channel", "operator", "trigger")


def _item(e: Event, who: dict[str, str]) -> str:
    agent = who.get(e.agent_id, e.agent_id)
    return (
        f"<li>{when(e.ts)} <b>{esc(e.type)}</b> <span class=agent>{esc(agent)}</span>"
        f" <span class=what>{esc(what(e))}</span></li>"
    )


def _runs(events: list[Event], who: dict[str, str]) -> list[list[Event]]:
    """Events in a row by one agent (by its name: `alice` and `Alice` are one)."""

    def name(e: Event) -> str:
        return who.get(e.agent_id, e.agent_id).casefold()

    runs: list[list[Event]] = []
    for e in events:
        if runs and name(runs[-1][0]) == name(e):
            runs[-1].append(e)
        else:
            runs.append([e])
    return runs


def items(events: list[Event], who: dict[str, str], zone: ZoneInfo, group: bool = True) -> Markup:
    """Events newest first; a busy agent's run folded under one line (`group`)."""
    out: list[str] = []
    for run in _runs(events, who):
        if len(run) < GROUP_AT or not group:
            out.extend(_item(e, who) for e in run)
            continue
        agent = who.get(run[0].agent_id, run[0].agent_id)
        counts = Counter(e.type for e in run).most_common()
        told = ", ".join(plural(t, n) for t, n in counts[:3]) + (", \u2026" if counts[3:] else "")
        first, last = _clock(run[-1].ts, zone), _clock(run[0].ts, zone)
        span = first if first == last else f"{first}\u2013{last}"
        inner = "".join(_item(e, who) for e in run)
        out.append(
            f'<li class="run"><details><summary>{when(run[0].ts)} '
            f"<span class=agent>{esc(agent)}</span>: {len(run)} events ({esc(told)}), {esc(span)}"
            "</summary>"
            f'<ul class="events">{inner}</ul></details></li>'
        )
    return Markup("".join(out))


def _clock(ts: float, zone: ZoneInfo) -> str:
    return datetime.fromtimestamp(ts, zone).strftime("%H:%M")


def recent_events(view: OpsView) -> Markup:
    assert view.events.path is not None
    events, _before = tail(view.events.path, EVENTS_ON_OVERVIEW)
    shown = items(events, worker_names(view, {e.agent_id for e in events}), view.ledger.zone)
    body = Markup(
        '<p><span id="live-status">connecting</span> \u00b7 '
        f'{link("/events", "all events, filter")}</p><ul id="live-events">{shown}</ul>'
    )
    return Markup(f'<section class="wide" id="events"><h2>Recent events</h2>{body}</section>')


def matching(
    view: OpsView, kind: str, agent: str, before: int | None
) -> tuple[list[Event], int, int]:
    """Up to EVENTS_PAGE events of type prefix `kind` and agent `agent`, newest first,
    looking through about SCAN_LIMIT; the offset to go on from (0: the start of the
    log) and how many were looked through. Lines are picked by a regex over the raw
    log (bot/ops/tail.py `scan_back`), then parsed and checked."""
    path = view.events.path
    assert path is not None
    if not (kind or agent):
        events, older = tail(path, EVENTS_PAGE, before)
        return events, older, len(events)
    agent_key = agent.casefold()
    needles = _needles(kind, agent_key)
    found: list[Event] = []
    scanned, offset, last_at, step = 0, before, 0, EVENTS_PAGE * 4
    while len(found) < EVENTS_PAGE and scanned < SCAN_LIMIT and offset != 0:
        lines, older = scan_back(path, step, offset, needles)
        for at, line in lines:
            e = parse_line(line)
            if e is not None and _fits(e, kind, agent_key):
                if len(found) == EVENTS_PAGE:
                    return found, last_at, scanned  # the next page: what began before the last
                found.append(e)
                last_at = at
        scanned += step
        offset, step = older, min(SCAN_STEP, step * 4)
    return found, offset or 0, scanned


def _needles(kind: str, agent: str) -> list[bytes]:
    """What a line holding such an event must contain, the likely rarer word first (a
    word with other than ASCII is left to the exact check: the log escapes it)."""
    words = [w.casefold().encode() for w in (agent, kind) if w and w.isascii()]
    return words or [b"{"]


def _fits(e: Event, kind: str, agent: str) -> bool:
    """Of type `kind` (or under it: `tool` is `tool.*`) and by `agent`, an id or a
    name in any case (a worker's id is its name in lower case)."""
    if kind and not (e.type == kind or e.type.startswith(kind.rstrip(".") + ".")):
        return False
    return not agent or e.agent_id.casefold() == agent


def events_page(view: OpsView, kind: str, agent: str, before: int | None) -> Markup:
    events, older, scanned = matching(view, kind, agent, before)
    shown = items(
        events,
        worker_names(view, {e.agent_id for e in events}),
        view.ledger.zone,
        group=not agent,
    )
    params = {k: v for k, v in (("type", kind), ("agent", agent)) if v}
    nav = link("/events", "older \u2192", before=older, **params) if older else Markup("")
    note = Markup("")
    if (kind or agent) and len(events) < EVENTS_PAGE and older:
        note = Markup(f"<p>Looked through the newest {scanned:,} events.</p>")
    body = Markup(
        f'{_filter_form(kind, agent)}{note}<ul class="events">{shown}</ul>'
        f'<nav class="pager">{nav}</nav>'
    )
    said = [f"of type {kind}" if kind else "", f"by {agent}" if agent else ""]
    title = " ".join(["Events", *[w for w in said if w], "(newest first)"])
    return section(title, body)


def _filter_form(kind: str, agent: str) -> Markup:
    return Markup(
        '<form class="search" method="get" action="/events">'
        f'<label>type <input name="type" value="{esc(kind)}" placeholder="tool, message.sent">'
        f'</label> <label>agent <input name="agent" value="{esc(agent)}" '
        'placeholder="Alice"></label> <button type="submit">Filter</button> '
        + " ".join(link("/events", k, type=k, agent=agent or None) for k in KINDS)
        + "</form>"
    )
