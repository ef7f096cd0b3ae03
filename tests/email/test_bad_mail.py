"""Broken and hostile mail parses without an exception, each within 50 ms of CPU time.

Truncated MIME, wrong charsets, missing boundaries, 10,000 nested parts, lines shaped
to make a quote-header pattern backtrack; then generated text through `strip_reply`.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.email.parse import parse_mail
from channels.email.reply import strip_reply

HEAD = b"From: Ann <ann@example.com>\r\nMessage-ID: <1@example.com>\r\n"
NESTED = b"".join(
    b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(10_000)
)
REDOS_LINES = {
    "wrote": b"On " + b"1 a " * 60 + b"wrote " * 40 + b"x" * 100,
    "address": b"2017 " + b"<a@b " * 80 + b">" * 40,
    "block": b"From: " + b"Sent: " * 30 + b"x" * 150,
    "long": b"On 1 Jan " + b"a" * 100_000 + b" wrote:",
    "quotes": b">" * 50_000,
}
BAD = {
    "truncated": HEAD + b'Content-Type: multipart/mixed; boundary="B"\r\n\r\n--B\r\nContent-Ty',
    "no boundary": HEAD + b"Content-Type: multipart/alternative\r\n\r\n--X\r\nhello\r\n--X--",
    "wrong charset": HEAD + b"Content-Type: text/plain; charset=utf-8\r\n\r\nGr\xfc\xdfe \xff\xfe",
    "unknown charset": HEAD + b"Content-Type: text/plain; charset=x-nope\r\n\r\nhello",
    "bad base64": HEAD + b"Content-Transfer-Encoding: base64\r\n\r\n!!!not base64===",
    "nested": HEAD + NESTED + b"Content-Type: text/plain\r\n\r\nhello\r\n",
    **{
        f"redos {name}": HEAD + b"\r\nAnswer.\r\n" + (line + b"\r\n") * 20 + b"> q\r\n"
        for name, line in REDOS_LINES.items()
    },
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_broken_mail_parses_without_a_runaway(case: str) -> None:
    """A catastrophic regex takes seconds to hours here; a normal parse about 1 ms, so the
    bound is 500 times that, never reached on a loaded machine."""
    parse_mail(BAD["truncated"], 20_000)  # the patterns compile once per process
    start = time.process_time()
    mail = parse_mail(BAD[case], 20_000)
    assert time.process_time() - start < 0.5
    assert mail.message_id


def test_a_deeply_nested_mail_keeps_its_headers() -> None:
    mail = parse_mail(BAD["nested"], 20_000)
    assert mail.sender == "ann@example.com" and mail.text == ""


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=120),
            st.sampled_from(["> q", "On 1 Jan wrote:", "From: a", "Sent: b", "-----", ""]),
        ),
        max_size=40,
    )
)
def test_any_text_strips_without_an_exception(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert isinstance(strip_reply(text), str)


PARTS = b"".join(
    b"--P\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>%s</p>\r\n" % (b"x" * 900)
    for _ in range(3_200)
)
MANY_PARTS = (
    HEAD + b'Content-Type: multipart/mixed; boundary="P"\r\n\r\n'
    b"--P\r\nContent-Type: text/plain\r\n\r\nHello\r\n" + PARTS + b"--P--\r\n"
)


def test_a_3_mb_mail_of_thousands_of_parts_is_cut_at_the_parts_bound() -> None:
    """The parts bound is what keeps it fast: the stdlib parser walks every part."""
    assert len(MANY_PARTS) > 3_000_000
    mail = parse_mail(MANY_PARTS, 20_000)
    assert (mail.sender, mail.text, mail.cut) == ("ann@example.com", "Hello", True)


def test_a_large_attachment_is_not_cut_by_the_parts_bound() -> None:
    data = b"A" * 3_000_000
    raw = (
        HEAD + b'Content-Type: multipart/mixed; boundary="P"\r\n\r\n'
        b"--P\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
        b"--P\r\nContent-Type: application/octet-stream\r\n"
        b'Content-Disposition: attachment; filename="a.bin"\r\n\r\n' + data + b"\r\n--P--\r\n"
    )
    mail = parse_mail(raw, 20_000)
    assert [a.size for a in mail.attachments] == [3_000_000] and not mail.cut
