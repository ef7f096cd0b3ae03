"""Property: no generated mail, however broken, crashes the channel's inbound path.

Thousands of messages with bad MIME, bad charsets, huge parts and missing headers go
through `EmailChannel.handle` (parse, filter, journal) against a real store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.channel_context import ChannelContext
from bot.core.bus import Bus
from bot.core.events import EventLog
from bot.inbox.human import HumanNode
from bot.store.core import Store
from channels.email import EmailChannel
from config.settings import load_settings

CHARSETS = ["utf-8", "latin-1", "x-unknown", "utf-7", "shift_jis", "", "utf-8'%%", "koi8-r"]
ENCODINGS = ["base64", "quoted-printable", "7bit", "8bit", "x-uuencode", "bogus"]
TYPES = ["text/plain", "text/html", "application/pdf", "multipart/mixed", "message/rfc822", "x/y"]
NAMES = [
    "From",
    "To",
    "Subject",
    "Message-ID",
    "In-Reply-To",
    "References",
    "Content-Type",
    "Auto-Submitted",
    "Return-Path",
    "Precedence",
    "List-Id",
    "X-Loop",
    "Date",
    "Cc",
]

FROMS = [
    "From: Ann <ann@example.com>",
    "From: =?x-bad?q?A=ZZ?= <ann@example.com>",
    "From: ann@example.com (Ann",
    "From: ann@example.com",
    "",
]

junk = st.binary(max_size=200)
word = st.text(max_size=40)
encoded_word = st.builds(
    lambda cs, enc, body: f"=?{cs}?{enc}?{body}?=",
    st.sampled_from(CHARSETS),
    st.sampled_from(["q", "b", "x"]),
    st.text(max_size=20),
)
header_value = st.one_of(
    word,
    encoded_word,
    st.sampled_from(["<>", "ann@example.com", "<a@b> <c@d", "@", "<<>>"]),
    st.builds(lambda n: f"Ann <ann{n}@example.com>", st.integers(0, 3)),
)
header = st.builds(lambda n, v: f"{n}: {v}", st.sampled_from(NAMES) | word, header_value)


# Every strategy is built once, here: one built inside a draw is a new object hypothesis
# validates again on each draw, which cost most of this test's time (the mails drawn are
# the same either way).
types, charsets, encodings = (st.sampled_from(x) for x in (TYPES, CHARSETS, ENCODINGS))
huge_sizes = st.sampled_from([0] * 7 + [300_000])
tail = st.text(max_size=80)


@st.composite
def part(draw: st.DrawFn, depth: int = 0) -> bytes:
    kind = draw(types)
    lines = [f"Content-Type: {kind}; charset={draw(charsets)}; boundary=b{depth}"]
    lines.append(f"Content-Transfer-Encoding: {draw(encodings)}")
    if draw(st.booleans()):
        lines.append(f'Content-Disposition: attachment; filename="{draw(word)}"')
    head = "\r\n".join(lines).encode("utf-8", "surrogateescape")
    if kind.startswith("multipart") and depth < 3:
        children = draw(CHILDREN[depth + 1])
        sep = f"\r\n--b{depth}\r\n".encode()
        closing = draw(CLOSINGS[depth])
        return head + b"\r\n\r\n" + sep + sep.join(children) + closing
    huge = draw(huge_sizes)
    return head + b"\r\n\r\n" + draw(junk) + b"x" * huge + draw(tail).encode()


#: a multipart's children at each depth, and its closings
CHILDREN = {depth: st.lists(part(depth), max_size=3) for depth in (1, 2, 3)}
CLOSINGS = {
    depth: st.sampled_from([f"\r\n--b{depth}--\r\n".encode(), b"", b"--"]) for depth in (0, 1, 2)
}

HEADERS, SENDERS, BODIES = st.lists(header, max_size=12), st.sampled_from(FROMS), part() | junk


@st.composite
def mail(draw: st.DrawFn) -> bytes:
    headers = draw(HEADERS)
    # most mails come from an allowed sender, so the journal path is fuzzed too
    sender = draw(SENDERS)
    headers.insert(draw(st.integers(0, len(headers))), sender)
    raw = "\r\n".join(headers).encode("utf-8", "surrogateescape")
    body = draw(BODIES)
    return draw(st.sampled_from([raw + b"\r\n\r\n" + body, body, raw, b""]))


def test_no_generated_mail_crashes_the_channel(tmp_path: Path) -> None:
    conf = load_settings(
        None,
        {
            "SWITCHBOARD_DATA_DIR": str(tmp_path),
            "EMAIL_ADDRESS": "bot@example.com",
            "EMAIL_ALLOWED_SENDERS": "@example.com",
            "EMAIL_MAX_PER_SENDER_PER_HOUR": "100000",
            # no generated mail is verified: taken as unverified, each one still reaches
            # the journal path (and the unverified sender's)
            "EMAIL_UNVERIFIED": "accept",
            "IMAP_HOST": "127.0.0.1",
            "IMAP_USER": "bot",
            "IMAP_PASSWORD": "x",
            "SMTP_HOST": "127.0.0.1",
        },
    )
    store = Store(tmp_path / "db.sqlite")
    log = EventLog(None)
    seen: dict[str, int] = {}
    log.subscribe(lambda e: seen.__setitem__(e.type, seen.get(e.type, 0) + 1))
    set_aside: list[str] = []
    log.subscribe(lambda e: set_aside.extend([str(e.data.get("reason"))] * _aside(e.data)))
    human = HumanNode(store, Bus(store), log, None)
    channel = EmailChannel(conf, ChannelContext(human))
    counts = {"handled": 0}

    @settings(
        max_examples=2500,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mail(), st.integers(0, 60_000_000))
    def run(raw: bytes, size: int) -> None:
        loop.run(channel.handle(raw, max(size, len(raw))))
        counts["handled"] += 1

    with asyncio.Runner() as loop:  # one event loop for every mail, as in the running bot
        run()
    store.close()
    assert counts["handled"] >= 2500
    # both paths were exercised: mails journaled for the coordinator, and mails refused
    assert seen["message.received"] > 100 and seen["message.refused"] > 100, seen
    assert set_aside == []  # every mail was journaled or refused by a rule, none failed


def _aside(data: dict[str, object]) -> int:
    return int(str(data.get("reason", "")).startswith("could not be processed"))
