"""Answers typed inside the quote of the bot's own mail (channels/email/inside.py): every
quoted line that is not words of ours is the person's, shown under the lines of ours it
follows; quote headers, deeper quotes and our own lines (however the client wrapped
them) are never taken for an answer."""

from __future__ import annotations

from bot.core.html_text import html_to_text
from channels.email.inside import answers_inside

OWN = (
    "I need three things before I order the servers:\n\n"
    "1. **Which region** should they run in?\n2. How many do we need?\n"
    "3. Is there a budget cap?"
)
HEADER = "On 23 Nov 2026, at 09:12, Alice (Switchboard) <bot@example.org> wrote:"


def test_answers_typed_inside_the_quote_are_found_with_their_questions() -> None:
    body = (
        f"Hi Alice,\n\n{HEADER}\n\n> I need three things before I order the servers:\n>\n"
        "> 1. Which region should they run in?\n> EU, Frankfurt.\n"
        "> 2. How many do we need?\n> Four.\n> 3. Is there a budget cap?\n"
    )
    assert answers_inside(body, OWN) == [
        "",
        "> 1. Which region should they run in?",
        "EU, Frankfurt.",
        "",
        "> 2. How many do we need?",
        "Four.",
    ]


def test_a_quote_of_ours_alone_however_wrapped_holds_no_answer() -> None:
    rewrapped = (
        "I need three things before I order\nthe servers: 1. Which region should\n"
        "they run in? 2. How many do we need? 3. Is there a budget cap?"
    )
    quoted = "\n".join(f"> {x}" for x in rewrapped.splitlines())
    assert answers_inside(f"Thanks!\n\n{HEADER}\n{quoted}\n", OWN) == []
    assert answers_inside("No quote at all, EU.\n", OWN) == []


def test_headers_and_older_history_inside_the_quote_are_not_answers() -> None:
    body = (
        f"Hi,\n\n> {HEADER}\n> From: Alice <bot@example.org>\n> Subject: servers\n"
        "> 3. Is there a budget cap?\n> > an older mail quoted in ours\n> Yes, 40k.\n"
    )
    assert answers_inside(body, OWN) == ["", "> 3. Is there a budget cap?", "Yes, 40k."]


def test_an_html_blockquote_answered_inside_is_read_the_same() -> None:
    html = (
        "<div>Hi Alice,</div><blockquote type='cite'><div>" + HEADER.replace("<", "&lt;") +
        "</div><div>1. Which region should they run in?</div><div>EU.</div>"
        "<div>2. How many do we need?</div><div style='color:blue'>Four.</div>"
        "</blockquote>"
    )  # fmt: skip
    found = answers_inside(html_to_text(html), OWN)
    assert [x for x in found if x] == [
        "> 1. Which region should they run in?",
        "EU.",
        "> 2. How many do we need?",
        "Four.",
    ]


def test_a_link_of_ours_quoted_either_way_is_not_an_answer() -> None:
    own = "Is this the page? See [the docs](https://docs.example.org/a) first."
    plain = f"{HEADER}\n> Is this the page? See the docs <https://docs.example.org/a> first.\n"
    html = f"{HEADER}\n> Is this the page? See [the docs](https://docs.example.org/a) first.\n"
    assert answers_inside(plain, own) == []
    assert answers_inside(html, own) == []
