"""The dashboard's /conversations page: every conversation by its place's name, the
people in it, its first line and its last activity, searchable (`?q=`).

Search runs here, on the server, over a summary of each of the newest INDEXED
conversations (place, people, first line, agent, key), kept in memory and remade only
for a conversation whose `updated_at` moved: a page reads one narrow SQL page of
(agent, key, updated_at) and parses only what changed since the last page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from bot.ops.html import Markup, esc, form, ident, link, section, short, table, when
from bot.ops.places import describe
from bot.ops.reading import people_and_first_line, subject_of
from bot.ops.views import worker_names

if TYPE_CHECKING:
    from bot.ops.desk import OpsView

PAGE = 50
#: the newest conversations the list and its search cover
INDEXED = 5000


@dataclass(slots=True)
class Summary:
    agent: str
    name: str  # the agent's name as given
    key: str
    target: str | None
    updated_at: float
    messages: int
    place: str
    people: list[str]
    first: str
    haystack: str  # what a search matches, case-folded


class ConversationIndex:
    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], Summary] = {}
        self._mark: tuple[int, float] | None = None
        self._newest: list[Summary] = []

    def newest(self, view: OpsView) -> list[Summary]:
        """Summaries of the newest INDEXED conversations, newest first; the last list
        again while no conversation was saved since."""
        mark = view.store.views.conversations_mark()
        if mark != self._mark:
            self._newest, self._mark = self._read(view), mark
        return self._newest

    def _read(self, view: OpsView) -> list[Summary]:
        rows = view.store.views.conversation_stamps(INDEXED)
        kept = self._kept
        stale = [r for r in rows if getattr(kept.get((r[0], r[1])), "updated_at", None) != r[3]]
        if stale:
            names = worker_names(view, {r[0] for r in stale if r[0] != "coordinator"})
            for agent, key, _target, updated_at in stale:
                name = names.get(agent, agent)
                kept[(agent, key)] = self._summarize(view, agent, name, key, updated_at)
        if len(kept) > len(rows):  # forget what left the window or was removed
            self._kept = {(r[0], r[1]): kept[(r[0], r[1])] for r in rows}
        return [self._kept[(r[0], r[1])] for r in rows]

    def search(self, view: OpsView, query: str) -> list[Summary]:
        words = query.casefold().split()
        found = self.newest(view)
        if not words:
            return found
        return [s for s in found if all(w in s.haystack for w in words)]

    @staticmethod
    def _summarize(view: OpsView, agent: str, name: str, key: str, updated_at: float) -> Summary:
        messages, target = view.store.agents.load_conversation(agent, key)
        people, first = people_and_first_line(messages)
        place = describe(key, target, people, subject_of(messages), name)
        words = " ".join([place, *people, first, name, agent, key, target or ""])
        return Summary(agent, name, key, target, updated_at, len(messages), place, people,
                       short(first, 200), words.casefold())  # fmt: skip


def _fresh(csrf: str, s: Summary, back: str) -> Markup | str:
    if s.agent != "coordinator":
        return ""
    return form("/actions/new", csrf, {"conversation": s.key}, "", "Start afresh", back)


def conversations(
    view: OpsView, index: ConversationIndex, query: str, page: int, csrf: str
) -> Markup:
    found = index.search(view, query)
    start = (page - 1) * PAGE
    back = "/conversations" + ("?" + urlencode({"q": query}) if query else "")
    rows = [
        [
            link("/conversation", s.place, agent=s.agent, key=s.key),
            s.name,
            ", ".join(s.people) or "-",
            s.first or "-",
            Markup(f"{when(s.updated_at)}"),
            s.messages,
            _fresh(csrf, s, back),
        ]
        for s in found[start : start + PAGE]
    ]
    empty = f"no conversation matches \u201c{query}\u201d" if query else "none yet"
    headers = ["place", "agent", "people", "first line", "last activity", "messages", ""]
    body = _search_form(query) + _count(len(found), query) + table(headers, rows, empty)
    more = _pager(query, page, start + PAGE < len(found))
    return section("Conversations", Markup(body + more), "conversations")


def _search_form(query: str) -> Markup:
    return Markup(
        '<form class="search" method="get" action="/conversations">'
        f'<input type="search" name="q" value="{esc(query)}" aria-label="search" '
        'placeholder="a name, a person, words of the first line">'
        '<button type="submit">Search</button></form>'
    )


def _count(n: int, query: str) -> Markup:
    if not query:
        return Markup("")
    return Markup(f"<p>{n} conversation(s) match {ident(query)}.</p>")


def _pager(query: str, page: int, has_next: bool) -> Markup:
    parts = []
    q = query or None
    if page > 1:
        parts.append(link("/conversations", "\u2190 newer", q=q, page=page - 1))
    if has_next:
        parts.append(link("/conversations", "older \u2192", q=q, page=page + 1))
    return Markup('<nav class="pager">' + " ".join(parts) + "</nav>") if parts else Markup("")
