"""The dashboard's sections, rendered from the store, the event log and the live app.

Everything is read-only and paged: workers and conversations in pages of 50 (SQL
LIMIT/OFFSET), events from the end of the log, a transcript in pages of messages.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.ledger.usage import BUDGET_KEY, cost_text, day_start
from bot.ops.html import Markup, esc, form, link, pager, section, short, table, when
from bot.ops.live import summarize
from bot.ops.tail import tail
from bot.store.approvals import ApprovalRow
from bot.store.core import ACTIVE_WORKER_STATES, MissingTable
from bot.store.trigger_rows import job_id_of
from bot.store.usage import UsageTotals

if TYPE_CHECKING:
    from bot.app import App

PAGE = 50
EVENTS_ON_OVERVIEW = 30
TRANSCRIPT_PAGE = 40


def budget_banner(app: App) -> Markup | None:
    raw = app.store.get_kv(BUDGET_KEY)
    state = json.loads(raw) if raw else {}
    if not state.get("exceeded") or not app.ops.budget.exceeded:
        return None
    return Markup(
        f'<div class="banner">Daily LLM budget of ${state["limit"]:.2f} spent '
        f"(${state['spent']:.2f}): new model work waits until {esc(state['resumes'])}.</div>"
    )


def channels(app: App) -> Markup:
    rows = [[c, s, d, when(t)] for c, s, d, t in app.store.health()]
    return section(
        "Channels", table(["channel", "state", "detail", "updated"], rows, "none has run yet")
    )


def _stop(csrf: str, name: str) -> Markup:
    return form("/actions/stop", csrf, {"worker": name}, "", "Stop")


def agents(app: App, page: int, csrf: str) -> Markup:
    counts = app.store.views.worker_counts()
    workers = app.store.views.workers_page((page - 1) * PAGE, PAGE + 1)
    sessions = len(app.coordinator.sessions)
    rows: list[list[object]] = []
    if page == 1:
        convs = link("/conversations", f"{sessions} conversation(s) under way")
        rows.append(["coordinator", "coordinator", "live", "-", "-", convs, ""])
    for w in workers[:PAGE]:
        name = link("/conversation", w.name, agent=w.id, key="task")
        stop = _stop(csrf, w.name) if w.status in ACTIVE_WORKER_STATES else ""
        rows.append(
            [name, "worker", w.status, w.turns, when(w.updated_at), short(w.task, 200), stop]
        )
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no workers yet"
    body = Markup(f"<p>Workers: {esc(summary)}</p>") + table(
        ["name", "kind", "state", "turns", "last activity", "task", ""], rows
    )
    return section(
        "Agents and workers", Markup(body + pager("/", page, len(workers) > PAGE)), "agents"
    )


def _answer(csrf: str, question_id: str) -> Markup:
    box = Markup('<textarea name="text" rows="2" required aria-label="answer"></textarea>')
    return form("/actions/answer", csrf, {"question": question_id}, box, "Answer")


def questions(app: App, csrf: str) -> Markup:
    asked = app.store.open_questions()
    rows = [
        [
            link("/conversation", q.worker, agent=q.worker, key="task"),
            short(q.question, 300),
            q.target,
            when(q.asked_at),
            _answer(csrf, q.id),
        ]
        for q in asked[:PAGE]  # the oldest first: they have waited longest
    ]
    headers = ["asked by", "question", "asked in", "asked", "answer"]
    body = table(headers, rows, "nobody is waiting for an answer")
    more = Markup(f"<p>{len(asked) - PAGE} more</p>") if len(asked) > PAGE else Markup("")
    return section(f"Open questions ({len(asked)})", Markup(body + more))


def _decide(csrf: str, approval_id: str) -> Markup:
    approve = form("/actions/decide", csrf, {"approval": approval_id, "approve": "1"}, "",
                   "Approve")  # fmt: skip
    reason = Markup('<input name="reason" placeholder="reason" aria-label="reason">')
    deny = form("/actions/decide", csrf, {"approval": approval_id, "approve": "0"}, reason,
                "Deny")  # fmt: skip
    return Markup(approve + deny)


def approvals(pending: list[ApprovalRow], csrf: str) -> Markup:
    """Tool calls waiting for a person's yes: who asks, the tool, its arguments, where."""
    rows = [
        [
            a.speaker,
            a.tool,
            short(json.dumps(a.args, ensure_ascii=False), 300),
            a.target,
            when(a.requested_at),
            _decide(csrf, a.id),
        ]
        for a in pending[:PAGE]
    ]
    headers = ["asked by", "tool", "arguments", "asked in", "asked", "decide"]
    body = table(headers, rows, "no tool call waits for approval")
    return section(f"Pending approvals ({len(pending)})", body)


def _cancel(csrf: str, trigger_id: str, source: str) -> Markup | str:
    if source == "config":
        return ""
    return form("/actions/cancel", csrf, {"trigger": trigger_id}, "", "Cancel")


def triggers(app: App, csrf: str) -> Markup:
    try:
        rows = app.store.triggers.live()
        next_at = app.store.triggers.next_run_times()
    except MissingTable:
        rows, next_at = [], {}
    rows.sort(key=lambda r: next_at.get(job_id_of(r.id), float("inf")))
    lines = [
        [
            r.id,
            r.spec.type,
            r.spec.describe(),
            when(next_at.get(job_id_of(r.id))),
            r.spec.deliver_to or r.origin_target or "home",
            short(r.spec.action, 160),
            r.created_by if r.status == "active" else f"{r.created_by} (paused)",
            _cancel(csrf, r.id, r.source),
        ]
        for r in rows[:PAGE]
    ]
    more = Markup(f"<p>{len(rows) - PAGE} more</p>") if len(rows) > PAGE else Markup("")
    headers = ["id", "type", "schedule", "next fire", "to", "action", "by", ""]
    return section(f"Triggers ({len(rows)})", Markup(table(headers, lines) + more))


#: when summing today's calls takes longer than SLOW_SECONDS (100,000 calls today), the
#: sums are read at most every USAGE_TTL_SECONDS: a person does not read figures finer
USAGE_TTL_SECONDS = 5.0
SLOW_SECONDS = 0.02
_usage_cache: dict[tuple[int, float], tuple[float, list[UsageTotals], list[str]]] = {}


def _usage_today(app: App, start: float) -> tuple[list[UsageTotals], list[str]]:
    key = (id(app), start)
    cached = _usage_cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < USAGE_TTL_SECONDS:
        return cached[1], cached[2]
    began = time.monotonic()
    per_agent = app.store.usage.by_agent(start)
    unknown = app.store.usage.unpriced_models(start)
    _usage_cache.clear()
    if time.monotonic() - began > SLOW_SECONDS:
        _usage_cache[key] = (time.monotonic(), per_agent, unknown)
    return per_agent, unknown


def _sum(agent: str, rows: list[UsageTotals]) -> UsageTotals:
    total = UsageTotals(agent)
    for t in rows:
        total.calls += t.calls
        total.input_tokens += t.input_tokens
        total.output_tokens += t.output_tokens
        total.cache_read_tokens += t.cache_read_tokens
        total.cache_write_tokens += t.cache_write_tokens
        total.cost_usd += t.cost_usd
        total.unpriced += t.unpriced
    return total


def usage(app: App) -> Markup:
    zone = app.ops.ledger.zone
    start = day_start(zone, time.time())
    per_agent, unknown = _usage_today(app, start)
    rows: list[list[object]] = [
        [t.agent, t.calls, t.input_tokens, t.output_tokens, t.cache_read_tokens,
         t.cache_write_tokens, cost_text(t)]
        for t in [*per_agent, _sum("all", per_agent)] if t.calls
    ]  # fmt: skip
    headers = ["agent", "calls", "input", "output", "cache read", "cache write", "cost"]
    day = datetime.fromtimestamp(start, zone).strftime("%Y-%m-%d")
    notes = Markup("")
    if unknown:
        notes = Markup(f"<p>Cost unknown for {esc(', '.join(unknown))}: no price in the table.</p>")
    budget = app.ops.budget
    if budget.limit is not None:
        notes += Markup(
            f"<p>Daily budget ${budget.limit:.2f}: "
            f"{'EXCEEDED' if budget.exceeded else 'within'}.</p>"
        )
    title = f"LLM usage today ({day}, {zone.key})"
    return section(title, Markup(table(headers, rows, "no model calls today") + notes))


def event_items(events: list[dict[str, Any]]) -> Markup:
    items = "".join(
        f"<li>{when(e['ts'])} <b>{esc(e['type'])}</b> <span class=agent>{esc(e['agent'])}</span>"
        f" <code>{esc(e['data'])}</code></li>"
        for e in events
    )
    return Markup(items)


def recent_events(app: App) -> Markup:
    assert app.events.path is not None
    events, before = tail(app.events.path, EVENTS_ON_OVERVIEW)
    items = event_items([summarize(e) for e in events])
    older = link("/events", "older events", before=before) if before else Markup("")
    body = Markup(
        '<p><span id="live-status">connecting</span> \u00b7 '
        f'{older}</p><ul id="live-events">{items}</ul>'
    )
    return Markup(f'<section class="wide" id="events"><h2>Recent events</h2>{body}</section>')


def events_page(app: App, before: int | None) -> Markup:
    assert app.events.path is not None
    events, older = tail(app.events.path, 100, before)
    items = event_items([summarize(e) for e in events])
    nav = link("/events", "older \u2192", before=older) if older else Markup("")
    body = Markup(f'<ul class="events">{items}</ul><nav class="pager">{nav}</nav>')
    return section("Events (newest first)", body)


def _fresh(csrf: str, agent: str, key: str) -> Markup | str:
    if agent != "coordinator":
        return ""
    return form("/actions/new", csrf, {"conversation": key}, "", "Start afresh")


def conversations(app: App, page: int, csrf: str) -> Markup:
    convs = app.store.views.conversations_page((page - 1) * PAGE, PAGE + 1)
    rows = [
        [
            link("/conversation", f"{c.agent} / {c.key}", agent=c.agent, key=c.key),
            c.target or "-",
            when(c.updated_at),
            f"{c.size // 1024} KB",
            _fresh(csrf, c.agent, c.key),
        ]
        for c in convs[:PAGE]
    ]
    body = table(["conversation", "answers go to", "updated", "size", ""], rows, "none yet")
    return section("Conversations", Markup(body + pager("/conversations", page, len(convs) > PAGE)))


def transcript(app: App, agent: str, key: str, page: int | None) -> Markup:
    messages, target = app.store.load_conversation(agent, key)
    pages = max(1, -(-len(messages) // TRANSCRIPT_PAGE))
    current = pages if page is None else min(max(1, page), pages)
    start = (current - 1) * TRANSCRIPT_PAGE
    shown = messages[start : start + TRANSCRIPT_PAGE]
    body = "".join(_message(m) for m in shown) or '<p class="empty">no messages</p>'
    nav = []
    if current > 1:
        nav.append(link("/conversation", "\u2190 earlier", agent=agent, key=key, page=current - 1))
    nav.append(Markup(f"<span>page {current} of {pages} ({len(messages)} messages)</span>"))
    if current < pages:
        nav.append(link("/conversation", "later \u2192", agent=agent, key=key, page=current + 1))
    pager_html = Markup('<nav class="pager">' + " ".join(nav) + "</nav>")
    head = Markup(f"<p>Answers go to {esc(target or 'the home target')}.</p>")
    title = f"Conversation {agent} / {key}"
    return Markup(f'<section class="wide"><h2>{esc(title)}</h2>{head}{pager_html}{body}'
                  f"{pager_html}</section>")  # fmt: skip


def _message(message: dict[str, Any]) -> str:
    role = str(message.get("role", "?"))
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    parts = "".join(_block(b) for b in blocks if isinstance(b, dict))
    return f'<div class="msg {esc(role)}"><div class="role">{esc(role)}</div>{parts}</div>'


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"<pre>{esc(block.get('text', ''))}</pre>"
    if kind == "tool_use":
        args = json.dumps(block.get("input", {}), ensure_ascii=False)
        return f'<pre class="tool">\u2192 {esc(block.get("name"))}({esc(short(args, 2000))})</pre>'
    if kind == "tool_result":
        content = block.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        error = " (error)" if block.get("is_error") else ""
        return f'<pre class="tool">\u2190 result{error}: {esc(short(content, 4000))}</pre>'
    if kind in ("thinking", "redacted_thinking"):
        return '<pre class="tool">(thinking, not shown)</pre>'
    return f"<pre>[{esc(kind)}]</pre>"
