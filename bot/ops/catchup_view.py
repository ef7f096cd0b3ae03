"""The dashboard's catchup page, `/catchup?person=..`: what the agents said to one
person since they last spoke (bot/ledger/catchup.py), for the operator.

Without `person`, the people to choose from: the listed people, then every other
platform id that spoke. With it, that person's items, newest first, each linked to its
conversation's transcript. Read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.core.readout import ago
from bot.ledger.catchup import Catchup, catchup
from bot.ops.html import Markup, esc, link, section, short

if TYPE_CHECKING:
    from bot.ops.desk import OpsView

_SAID = {"answer": "said", "question": "asks (open)", "result": "finished"}


def catchup_page(view: OpsView, who: str) -> tuple[str, Markup]:
    """(title, body) of the page."""
    if not who:
        return "Catch up", section("Catch up: choose a person", _choices(view))
    people = view.inbox.people
    idents = people.idents_of(who)
    found = catchup(view.store, people.conversations_of(idents), people.last_spoke(idents),
                    view.inbox.directory.workers)  # fmt: skip
    return f"Catch up: {who}", section(f"Catch up: {who}", _items(found), id="catchup")


def _choices(view: OpsView) -> Markup:
    people = view.inbox.people
    listed = people.listed()
    mine = {i for name in listed for i in people.idents_of(name)}
    others = sorted(((i, at) for i, at in people.speakers().items() if i not in mine),
                    key=lambda p: -p[1])  # fmt: skip
    rows = [link("/catchup", name, person=name) for name in listed]
    rows += [
        link("/catchup", ident, person=ident) + f" (last spoke {ago(at)})" for ident, at in others
    ]
    if not rows:
        return Markup('<p class="empty">Nobody has spoken to the bot yet.</p>')
    return Markup("<ul>" + "".join(f"<li>{r}</li>" for r in rows) + "</ul>")


def _items(found: Catchup) -> Markup:
    since = "never spoke" if found.since is None else f"last spoke {ago(found.since)}"
    head = Markup(f'<p class="note">{esc(since)}; newest first.</p>')
    if not found.items:
        return head + Markup('<p class="empty">Nothing since then.</p>')
    rows = "".join(
        "<tr>"
        f"<td>{esc(ago(i.at))}</td><td>{esc(i.speaker)}</td><td>{esc(_SAID[i.kind])}</td>"
        f"<td>{_where(i.where, i.subject, i.conversation)}</td><td>{esc(short(i.text, 400))}</td>"
        "</tr>"
        for i in found.items
    )
    more = f'<p class="note">and {found.more} more (older).</p>' if found.more else ""
    table = (
        "<table><thead><tr><th>when</th><th>who</th><th>what</th><th>where</th>"
        f"<th>text</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return head + Markup(table + more)


def _where(target: str, subject: str, conversation: str) -> Markup:
    shown = target + (f' "{subject}"' if subject else "")
    if not conversation:
        return esc(shown)
    return link("/conversation", shown, agent="coordinator", key=conversation)
