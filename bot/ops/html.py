"""Small HTML building blocks for the dashboard: every value is escaped here.

Text from people and models (messages, tasks, questions, tool arguments) reaches the
page only through `esc`, so `<script>` a person typed shows as text. No inline
script or style: the page's one script and stylesheet are served from /static
(and the Content-Security-Policy forbids anything else).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from urllib.parse import urlencode

from bot.core.readout import ago

NAV = (
    ("/", "Overview"), ("/conversations", "Conversations"), ("/events", "Events"),
    ("/audit", "Audit"), ("/catchup", "Catch up"),
)  # fmt: skip


class Markup(str):
    """HTML that is already safe (built by these helpers); everything else is escaped."""

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, esc(other)))


def esc(value: object) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def short(text: object, limit: int = 160) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def link(href: str, text: object, **params: object) -> Markup:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return Markup(f'<a href="{esc(href + ("?" + query if query else ""))}">{esc(text)}</a>')


def when(ts: float | None) -> Markup:
    """`5m ago`, with the exact UTC time on hover."""
    if not ts:
        return Markup("-")
    return Markup(f'<time data-ts="{ts:.3f}">{esc(ago(ts))}</time>')


def ident(value: object) -> Markup:
    """An id or a long token (a Slack target, a hash): the one kind of text that may
    break anywhere, so it never widens a table."""
    return Markup(f'<span class="id">{esc(value)}</span>')


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], empty: str = "none") -> Markup:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        return Markup(f'<p class="empty">{esc(empty)}</p>')
    return Markup(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def section(title: str, body: Markup, id: str = "", cls: str = "") -> Markup:
    """A card; `cls="half"` lets two sit side by side on a wide screen."""
    anchor = f' id="{esc(id)}"' if id else ""
    kind = f' class="{esc(cls)}"' if cls else ""
    return Markup(f"<section{anchor}{kind}><h2>{esc(title)}</h2>{body}</section>")


def pager(path: str, page: int, has_next: bool, **params: object) -> Markup:
    if page == 1 and not has_next:
        return Markup("")  # one page: nothing to turn
    parts = []
    if page > 1:
        parts.append(link(path, "\u2190 newer", page=page - 1, **params))
    parts.append(Markup(f"<span>page {page}</span>"))
    if has_next:
        parts.append(link(path, "older \u2192", page=page + 1, **params))
    return Markup('<nav class="pager">' + " ".join(parts) + "</nav>")


def form(
    action: str, csrf: str, hidden: dict[str, str], inner: str, button: str, back: str = "/"
) -> Markup:
    """A POST form to an operator action, carrying the CSRF token and the page to come
    back to (`back`: the action redirects there with its message); `inner` is markup
    made here (inputs), values of `hidden` are escaped."""
    fields = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in {"csrf": csrf, "back": back, **hidden}.items()
    )
    return Markup(
        f'<form class="act" method="post" action="{esc(action)}">{fields}{inner}'
        f'<button type="submit">{esc(button)}</button></form>'
    )


def page(
    title: str, body: Markup, banner: Markup | None = None, csrf: str = "", nav: bool = True
) -> str:
    """A whole page: the nav (none on the sign-in page: every link would lead back to
    it), Sign out when there is a session (`csrf`), an optional banner, the body."""
    links = " ".join(link(href, text) for href, text in NAV) if nav else ""
    if csrf:
        links += form("/logout", csrf, {}, "", "Sign out")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} \u00b7 Switchboard</title>"
        '<link rel="stylesheet" href="/static/dashboard.css">'
        '<script src="/static/dashboard.js" defer></script></head><body>'
        f"<header><h1>Switchboard</h1><nav>{links}</nav></header>{banner or ''}<main>{body}</main>"
        "</body></html>"
    )
