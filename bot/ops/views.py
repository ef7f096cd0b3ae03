"""The overview's sections, rendered from the store and the live runtime (the view,
bot/ops/desk.py): workers, open questions, pending approvals, channels and MCP servers
(each with the reason it is not up), triggers, today's usage.

Everything is read-only and paged: workers in pages of 50 (SQL LIMIT/OFFSET). Ids and
targets are `ident`s, the one text that may break anywhere.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.ledger.status import runtime_live
from bot.ledger.tools_status import MCP_PREFIX
from bot.ledger.usage import BUDGET_KEY, cost_text, day_start
from bot.ops.html import Markup, esc, form, ident, link, pager, section, short, table, when
from bot.ops.places import describe
from bot.ops.reading import arguments
from bot.store.approvals import ApprovalRow
from bot.store.core import ACTIVE_WORKER_STATES, MissingTable
from bot.store.trigger_rows import job_id_of
from bot.store.usage import UsageTotals

if TYPE_CHECKING:
    from bot.ops.desk import OpsView

PAGE = 50


def budget_banner(view: OpsView) -> Markup | None:
    raw = view.store.get_kv(BUDGET_KEY)
    state = json.loads(raw) if raw else {}
    if not state.get("exceeded") or not view.budget.exceeded:
        return None
    return Markup(
        f'<div class="banner">Daily LLM budget of ${state["limit"]:.2f} spent '
        f"(${state['spent']:.2f}): new model work waits until {esc(state['resumes'])}.</div>"
    )


def _state(state: str) -> Markup:
    kind = "up" if state == "connected" else "down"
    return Markup(f'<span class="state {kind}">{esc(state)}</span>')


def channels(view: OpsView) -> Markup:
    """Each channel's and MCP server's state, with the reason it gives when not up."""
    rows = [[c, _state(s), d, when(t)] for c, s, d, t in view.store.health()]
    body = table(["channel", "state", "reason", "updated"], rows, "none has run yet")
    servers = view.store.kv_prefixed(MCP_PREFIX)
    if servers:
        live = runtime_live(view.store)
        mcp = [_mcp_row(name, json.loads(raw), live) for name, raw in sorted(servers.items())]
        body = Markup(body + Markup("<h3>MCP servers</h3>")
                      + table(["server", "state", "tools", "reason", "updated"], mcp))  # fmt: skip
    return section("Channels and MCP servers", body, "channels", "half")


def _mcp_row(name: str, info: dict[str, Any], live: bool) -> list[object]:
    state = str(info.get("state")) if live else f"unknown (was {info.get('state')})"
    reasons = [str(info.get("reason") or "")] + [
        f"{tool} not offered: {why}" for tool, why in (info.get("refused") or {}).items()
    ]
    reason = "; ".join(r for r in reasons if r)
    return [name, _state(state), info.get("tools", 0), reason, when(info.get("updated"))]


def _stop(csrf: str, name: str) -> Markup:
    """Stop asks once more (a fold, no script): `Stop…` opens `Stop Alice`."""
    button = form("/actions/stop", csrf, {"worker": name}, "", f"Stop {name}")
    return Markup(f'<details class="confirm"><summary>Stop…</summary>{button}</details>')


def asked_in(conversation: str | None, target: str) -> Markup:
    """Where a question or an approval was asked: the place's name, linked to the
    coordinator's conversation there, the raw target as an id beside it."""
    name = describe(conversation or target, target, [], "")
    shown = link("/conversation", name, agent="coordinator", key=conversation or target)
    return Markup(f"{shown} {ident(target)}")


def agents(view: OpsView, page: int, csrf: str) -> Markup:
    counts = view.store.views.worker_counts()
    workers = view.store.views.workers_page((page - 1) * PAGE, PAGE + 1)
    sessions = view.sessions()
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


def answer_form(csrf: str, question_id: str, back: str = "/") -> Markup:
    box = Markup('<textarea name="text" rows="2" required aria-label="answer"></textarea>')
    return form("/actions/answer", csrf, {"question": question_id}, box, "Answer", back)


def worker_names(view: OpsView, ids: Iterable[str] = ()) -> dict[str, str]:
    """Workers' ids to their names as given (`alice` -> `Alice`): the running ones, and
    those of `ids` from the store."""
    live = view.live_workers()
    names = view.store.views.worker_names([i for i in ids if i not in live])
    return names | {row.id: row.name for row in live.values()}


def questions(view: OpsView, csrf: str) -> Markup:
    asked = view.store.agents.open_questions()
    names = worker_names(view, [q.worker for q in asked[:PAGE]])
    rows = [
        [
            link("/conversation", names.get(q.worker, q.worker), agent=q.worker, key="task"),
            short(q.question, 300),
            asked_in(q.conversation, q.target),
            when(q.asked_at),
            answer_form(csrf, q.id),
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
            ident(a.tool),
            Markup(f'<span class="args">{esc(short(arguments(a.args), 300))}</span>'),
            asked_in(None, a.target),
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


def triggers(view: OpsView, csrf: str) -> Markup:
    try:
        rows = view.store.triggers.live()
        next_at = view.store.triggers.next_run_times()
    except MissingTable:
        rows, next_at = [], {}
    rows.sort(key=lambda r: next_at.get(job_id_of(r.id), float("inf")))
    lines = [
        [
            ident(r.id),
            r.spec.type,
            r.spec.describe(),
            when(next_at.get(job_id_of(r.id))),
            ident(r.spec.deliver_to or r.origin_target or "home"),
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


def _usage_today(view: OpsView, start: float) -> tuple[list[UsageTotals], list[str]]:
    key = (id(view), start)
    cached = _usage_cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < USAGE_TTL_SECONDS:
        return cached[1], cached[2]
    began = time.monotonic()
    per_agent = view.store.usage.by_agent(start)
    unknown = view.store.usage.unpriced_models(start)
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


def usage(view: OpsView) -> Markup:
    zone = view.ledger.zone
    start = day_start(zone, time.time())
    per_agent, unknown = _usage_today(view, start)
    names = worker_names(view, [t.agent for t in per_agent])
    rows: list[list[object]] = [
        [names.get(t.agent, t.agent), t.calls, t.input_tokens, t.output_tokens, t.cache_read_tokens,
         t.cache_write_tokens, cost_text(t)]
        for t in [*per_agent, _sum("all", per_agent)] if t.calls
    ]  # fmt: skip
    headers = ["agent", "calls", "input", "output", "cache read", "cache write", "cost"]
    day = datetime.fromtimestamp(start, zone).strftime("%Y-%m-%d")
    notes = Markup("")
    if unknown:
        notes = Markup(f"<p>Cost unknown for {esc(', '.join(unknown))}: no price in the table.</p>")
    budget = view.budget
    if budget.limit is not None:
        notes += Markup(
            f"<p>Daily budget ${budget.limit:.2f}: "
            f"{'EXCEEDED' if budget.exceeded else 'within'}.</p>"
        )
    title = f"LLM usage today ({day}, {zone.key})"
    body = Markup(table(headers, rows, "no model calls today") + notes)
    return section(title, body, "usage", "half")
