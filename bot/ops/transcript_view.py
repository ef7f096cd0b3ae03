"""The dashboard's /conversation page: one transcript as people see it.

People's words read `Ann (slack): text`, the agent's answers under its name; what the
runtime added (notices, runtime notes, context, tool calls and their results) is folded
in a `<details>` a reader opens when they want it; thinking is never shown. Pages of
TRANSCRIPT_PAGE messages count from the newest, so the page that opens is full.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from bot.ops.html import Markup, esc, ident, link, short
from bot.ops.places import place_name
from bot.ops.reading import Piece, message_pieces
from bot.ops.views import answer_form, worker_names

if TYPE_CHECKING:
    from bot.ops.desk import OpsView

TRANSCRIPT_PAGE = 40


def transcript(
    view: OpsView, agent: str, key: str, page: int | None, csrf: str = ""
) -> tuple[str, Markup]:
    """The page's title and body; a worker waiting for an answer says so above, with
    the form to answer it."""
    messages, target = view.store.agents.load_conversation(agent, key)
    pages = max(1, -(-len(messages) // TRANSCRIPT_PAGE))
    current = pages if page is None else min(max(1, page), pages)
    end = len(messages) - (pages - current) * TRANSCRIPT_PAGE
    shown = messages[max(0, end - TRANSCRIPT_PAGE) : end]
    nav = []
    if current > 1:
        nav.append(link("/conversation", "\u2190 earlier", agent=agent, key=key, page=current - 1))
    nav.append(Markup(f"<span>page {current} of {pages} ({len(messages)} messages)</span>"))
    if current < pages:
        nav.append(link("/conversation", "later \u2192", agent=agent, key=key, page=current + 1))
    pager = Markup('<nav class="pager">' + " ".join(nav) + "</nav>") if pages > 1 else Markup("")
    name = worker_names(view, [agent]).get(agent, agent)
    title = f"{name}: {place_name(key, target, messages, name)}"
    body = "".join(_message(name, m) for m in shown) or '<p class="empty">no messages</p>'
    head = Markup(
        f"<p>Answers go to {ident(target or 'the home target')} \u00b7 "
        f"conversation {ident(key)}</p>"
    )
    back = "/conversation?" + urlencode({"agent": agent, "key": key})
    waiting = _waiting(view, agent, name, csrf, back) if key == "task" else ""
    section = Markup(
        f'<section class="wide transcript"><h2>{esc(title)}</h2>{head}{waiting}{pager}{body}'
        f"{pager}</section>"
    )
    return title, section


def _waiting(view: OpsView, agent: str, name: str, csrf: str, back: str) -> str:
    asked = [q for q in view.store.agents.open_questions() if q.worker == agent]
    return "".join(
        f'<div class="waiting"><p>{esc(name)} is waiting for an answer: '
        f"<b>{esc(q.question)}</b></p>{answer_form(csrf, q.id, back)}</div>"
        for q in asked
    )


def _message(agent: str, message: dict[str, Any]) -> str:
    role = str(message.get("role", "?"))
    parts = "".join(_piece(agent, role, kind, p) for kind, p in message_pieces(message))
    if not parts:
        return ""
    return f'<div class="msg {esc(role)}">{parts}</div>'


def _piece(agent: str, role: str, kind: str, piece: Piece) -> str:
    if kind == "tool_use":
        return _folded("tool", f"{agent} used {piece.who}", short(piece.text, 2000))
    if kind == "tool_result":
        return _folded("tool", "result: " + short(piece.text.split("\n", 1)[0], 80),
                       short(piece.text, 4000))  # fmt: skip
    if piece.kind == "note":
        first = piece.text.split(":", 1)[0] if ":" in piece.text[:60] else "runtime note"
        return _folded("note", first, short(piece.text, 4000))
    who = agent if role == "assistant" else piece.who
    via = f" ({piece.via})" if piece.via else ""
    name = f'<span class="who">{esc(who)}{esc(via)}:</span> ' if who else ""
    return f'<p class="said">{name}{esc(piece.text)}</p>'


def _folded(kind: str, summary: str, text: str) -> str:
    inner = f"<pre>{esc(text)}</pre>" if text else ""
    return f'<details class="{kind}"><summary>{esc(summary)}</summary>{inner}</details>'
