"""Who a mail is from: the From address parsed from the raw header (a display name,
decoded or not, is never an address), and the receiving server's verdict on it
(Authentication-Results from EMAIL_AUTHSERV_ID only, aligned with the From domain)."""

from __future__ import annotations

import email
import email.policy
import re
from email.header import Header
from email.utils import formataddr

from hypothesis import given
from hypothesis import strategies as st

from channels.email import auth
from channels.email.parse import parse_mail
from channels.email.sender import author, mailbox

FORGED_FROM = [
    # the reported attack: an encoded display name that decodes to "ann@example.com,"
    ("=?utf-8?q?ann=40example=2Ecom=2C?= <mallory@evil.test>", "mallory@evil.test"),
    ("=?utf-8?b?YW5uQGV4YW1wbGUuY29t?= <mallory@evil.test>", "mallory@evil.test"),
    ('"ann@example.com" <mallory@evil.test>', "mallory@evil.test"),
    ('"ann@example.com, " <mallory@evil.test>', "mallory@evil.test"),
    ("mallory@evil.test (ann@example.com)", "mallory@evil.test"),
    ("(ann@example.com) mallory@evil.test", "mallory@evil.test"),
    ("=?utf-8?q?ann=40example=2Ecom?=", ""),  # an encoded word is never an address
    ("=?utf-8?q?Ann?= <=?utf-8?q?ann=40example.com?=>", ""),
    ("ann@example.com <mallory@evil.test>", ""),  # ambiguous: refused, not guessed
    ("ann@example.com (x) <mallory@evil.test>", ""),
    ("<mallory@evil.test> ann@example.com", ""),
    ("Ann <ann@example.com> <mallory@evil.test>", ""),
    ("ann@example.com, mallory@evil.test", ""),
    ("Team: ann@example.com;", ""),  # a group
    ("Team: mallory@evil.test, ann@example.com;", ""),
    ("undisclosed-recipients:;", ""),
    ("Ann <ann@example.com", ""),
    ("", ""),
    ('Ann <"ann@example.com"@evil.test>', '"ann@example.com"@evil.test'),
]


def test_forged_from_shapes_name_the_real_mailbox_or_none() -> None:
    for raw, expected in FORGED_FROM:
        assert mailbox(raw).address == expected, raw
        assert bool(mailbox(raw).refused) == (expected == ""), raw


def test_several_from_headers_or_another_sender_are_refused() -> None:
    def of(headers: str) -> str:
        msg = email.message_from_bytes(headers.encode() + b"\n\nhi\n", policy=email.policy.compat32)
        return author(msg).refused

    assert of("From: ann@example.com\nFrom: mallory@evil.test") == "several From headers"
    assert of("To: bot@x.org") == "no From header"
    assert "Sender" in of("From: ann@example.com\nSender: mallory@evil.test")
    assert of("From: Ann <ann@example.com>\nSender: ann@example.com") == ""


def test_names_read_right_utf8_encoded_and_with_commas() -> None:
    raw = (
        "From: =?utf-8?b?Rm9vLCBCYXI=?= <foo@bar.com>\n"
        "Subject: Grüße =?utf-8?q?aus_K=C3=B6ln?=\n"
        "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n"
        "--b\nContent-Type: application/pdf\n"
        'Content-Disposition: attachment; filename="Grüße.pdf"\n\nx\n'
        "--b\nContent-Type: application/pdf\n"
        "Content-Disposition: attachment; filename*=utf-8''Gr%C3%BC%C3%9Fe%202.pdf\n\nx\n"
        '--b\nContent-Type: application/pdf; name="=?utf-8?q?Gr=C3=BC=C3=9Fe_3.pdf?="\n\nx\n'
        "--b--\n"
    ).encode()
    mail = parse_mail(raw, 10_000)
    assert (mail.sender_name, mail.sender) == ("Foo, Bar", "foo@bar.com")
    assert mail.subject == "Grüße aus Köln"
    assert [a.name for a in mail.attachments] == ["Grüße.pdf", "Grüße 2.pdf", "Grüße 3.pdf"]
    raw_utf8 = "From: Jürgen Groß <jg@example.de>\nSubject: Grüße\n\nhi\n".encode()
    assert parse_mail(raw_utf8, 10_000).sender_name == "Jürgen Groß"


# -- property: whatever the display name says, the address is the one in <> ---------------
TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=40
)
ATOM = st.text("abcdefghijklmnopqrstuvwxyz0123456789._-+", min_size=1, max_size=12).filter(
    lambda s: not s.startswith(".") and not s.endswith(".") and ".." not in s
)
LABEL = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
DOMAIN = st.lists(LABEL, min_size=1, max_size=3).map(".".join)


def _shapes(name: str, address: str) -> list[str]:
    comment = re.sub(r"[()\\]", "", name)
    return [
        formataddr((name, address)),  # what a mail client writes (quoted or encoded)
        f"{Header(name, 'utf-8').encode()} <{address}>",  # base64 encoded words
        f"{Header(name, 'utf-8', header_name='From').encode().replace('?b?', '?B?')} <{address}>",
        f"=?utf-8?q?{''.join(f'={b:02X}' for b in name.encode())}?= <{address}>",
        f"{address} ({comment})" if comment.strip() else address,
        '"{}" <{}>'.format(name.replace("\\", "\\\\").replace('"', '\\"'), address),
    ]


@given(TEXT, ATOM, DOMAIN)
def test_a_display_name_never_becomes_the_address(name: str, local: str, domain: str) -> None:
    address = f"{local}@{domain}"
    for shape in _shapes(name, address):
        header = " ".join(shape.split())  # unfolded, as the parser sees it
        found = mailbox(header)
        assert found.address == address.lower(), header
        strict = email.policy.default.header_factory("from", header)
        assert [a.addr_spec.lower() for a in strict.addresses] == [address.lower()], header


FRAGMENTS = st.sampled_from(
    ["ann@example.com", "mallory@evil.test", "<", ">", ",", ";", ":", '"', "(", ")", " ",
     "=?utf-8?q?ann=40example=2Ecom?=", "=?utf-8?b?YW5uQGV4YW1wbGUuY29t?=", "Ann", "@", "\\"]
)  # fmt: skip


@given(st.lists(FRAGMENTS, max_size=12).map("".join))
def test_an_address_found_is_the_strict_parsers_single_mailbox(header: str) -> None:
    found = mailbox(header)
    if not found.address:
        return
    # the stdlib's RFC 5322 parser agrees, and the address was written outside any
    # encoded word: decoding display text never produced it
    strict = email.policy.default.header_factory("from", header)
    assert [a.addr_spec.lower() for a in strict.addresses] == [found.address]
    bare = re.sub(r"=\?[^?]*\?[qQbB]\?[^?]*\?=", " ", header).lower()
    assert found.address.replace('"', "") in bare.replace('"', "").replace("\\", "")


# -- Authentication-Results ---------------------------------------------------------------
def _ar(value: str) -> tuple[str, str]:
    return ("Authentication-Results", value)


def verdict(headers: list[tuple[str, str]], from_domain: str) -> str | None:
    return auth.verified(auth.trusted(headers, "mx.example.com"), from_domain)


def test_pass_only_from_our_server_and_aligned_with_from() -> None:
    ok = _ar(
        "mx.example.com; spf=fail smtp.mailfrom=x.org; dkim=none; "
        "dmarc=pass header.from=example.com"
    )
    assert verdict([ok], "example.com") is None
    aligned_dkim = _ar("mx.example.com; dkim=pass header.d=mail.example.com header.s=s1")
    assert verdict([aligned_dkim], "example.com") is None
    aligned_spf = _ar("mx.example.com; spf=pass smtp.mailfrom=bounce@news.example.com")
    assert verdict([aligned_spf], "example.com") is None
    other_org = _ar(
        "mx.example.com; dkim=pass header.d=example.com.evil.test; "
        "spf=pass smtp.mailfrom=m@evil.test"
    )
    assert verdict([other_org], "example.com") is not None
    public_suffix = _ar("mx.example.com; dkim=pass header.d=co.uk")
    assert verdict([public_suffix], "example.co.uk") is not None
    wrong_dmarc = _ar("mx.example.com; dmarc=pass header.from=evil.test")
    assert verdict([wrong_dmarc], "example.com") is not None
    assert verdict([_ar("other.example.net; dmarc=pass header.from=example.com")], "example.com")
    assert verdict([], "example.com") == "no Authentication-Results from EMAIL_AUTHSERV_ID"


def test_results_the_sender_wrote_below_never_count() -> None:
    forged = _ar("mx.example.com; dmarc=pass header.from=example.com")
    real = _ar(
        "mx.example.com; spf=pass smtp.mailfrom=m@evil.test; dmarc=fail header.from=example.com"
    )
    received = ("Received", "from evil.test by mx.example.com")
    # below our server's own Received: an earlier hop's, or the sender's
    assert verdict([real, received, forged], "example.com") is not None
    assert verdict(
        [("Authentication-Results", "mx.example.com; spf=none"), received, forged], "example.com"
    )
    # below a foreign authserv-id: whatever is under it the sender could have written
    assert verdict(
        [_ar("relay.evil.test; dmarc=pass header.from=example.com"), forged], "example.com"
    )
    # the topmost result of each method counts
    assert verdict([real, forged], "example.com") is not None


def test_comments_and_quotes_in_results_are_read() -> None:
    value = (
        "mx.example.com (version 1) 1; dkim=pass (2048-bit key; unprotected) "
        'header.d="example.com" header.i=@example.com header.b="Ab+c"; '
        "spf=softfail (domain of x does not designate) smtp.mailfrom=x@y.org"
    )
    assert verdict([_ar(value)], "example.com") is None


def test_microsoft_365_results_and_several_ids() -> None:
    m365 = _ar(
        "spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=example.com; dkim=pass "
        "(signature was verified) header.d=example.com;dmarc=pass action=none "
        "header.from=example.com;compauth=pass reason=100"
    )
    assert auth.verified(auth.trusted([m365], "-"), "example.com") is None
    assert auth.verified(auth.trusted([m365], "mx.example.com"), "example.com") is not None
    fastmail = _ar("mx3.messagingengine.com; dmarc=pass header.from=example.com")
    ids = "mx1.messagingengine.com, mx3.messagingengine.com"
    assert auth.verified(auth.trusted([fastmail], ids), "example.com") is None


def test_a_dmarc_pass_without_header_from_is_about_the_one_from() -> None:
    assert verdict([_ar("mx.example.com; dmarc=pass")], "example.com") is None
    assert verdict([_ar("mx.example.com; dmarc=fail")], "example.com") is not None
    gmail = _ar("mx.example.com; dkim=pass header.i=@example.com header.s=2023 header.b=Ab")
    assert verdict([gmail], "example.com") is None


def test_long_headers_are_bounded_not_slow() -> None:
    # a run of encoded words took the stdlib's parser ~50 s for a From, ~16 s for a subject
    words = "=?utf-8?q?a?= " * 20_000
    raw = f"From: {words}<ann@example.com>\nSubject: {words}\n\nhi\n".encode()
    mail = parse_mail(raw, 10_000)
    assert mail.sender_refused == "From is over 998 characters"
    assert len(mail.subject) <= 2_000
    nested = "mx.example.com; dmarc=pass " + "(" * 25_000 + ")" * 25_000
    assert verdict([_ar(nested)], "example.com") is None


def test_an_encoded_word_glued_to_an_atom_never_becomes_the_address() -> None:
    # the stdlib decodes `=?...?=Ann` into the local part and domain: ann@example.comann
    assert mailbox("=?utf-8?q?ann=40example=2Ecom?=Ann").address == ""
    assert mailbox("=?utf-8?q?ann=40example=2Ecom?=Ann").refused
    # a broken encoded word in the display name is only display text
    assert mailbox("=?utf-8?B?eHB0bw?= <dummy@example.com>").address == "dummy@example.com"
