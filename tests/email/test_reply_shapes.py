# ruff: noqa: RUF001  (quote headers in Cyrillic, Turkish and CJK scripts)
"""The quote headers and thread shapes of each language and mail client, one at a time.

Each case is a reply as the client lays it out: the person's answer, the client's
quote header, the quoted mail. `strip_reply` must hand on exactly the answer.
"""

from __future__ import annotations

import pytest

from channels.email.parse import parse_mail
from channels.email.reply import FORWARDED, strip_reply

ANSWER = "Yes, ship it on Friday."
QUOTE = "> Shall we ship on Friday?\n> Ann\n"

HEADERS = {
    "en-gmail": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann@example.com> wrote:",
    "en-gmail-wrapped": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <\nann@example.com> wrote:",
    "en-no-colon": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann@example.com> wrote",
    "en-apple": "On 1 Jan 2024, at 10:00, Ann Smith <ann@example.com> wrote:",
    "en-yahoo": "On Monday, January 1, 2024, 10:00:00 AM GMT+1, Ann Smith <ann@example.com> wrote:",
    "gmail-iso": "2017-11-24 16:32 GMT+01:00 Ann Smith <ann@example.com>:",
    "zoho": "---- On Mon, 01 Jan 2024 10:00:00 +0100 Ann Smith <ann@example.com> wrote ----",
    "de": "Am Mo., 1. Jan. 2024 um 10:00 Uhr schrieb Ann Smith <ann@example.com>:",
    "de-wrapped": "Am Mo., 1. Jan. 2024 um 10:00 Uhr schrieb Ann Smith <\nann@example.com>:",
    "de-split": "Am 01.01.2024 um 10:00 schrieb\nAnn Smith <ann@example.com>:",
    "fr": "Le lun. 1 janv. 2024 à 10:00, Ann Smith <ann@example.com> a écrit :",
    "fr-wrapped": "Le lun. 1 janv. 2024 à 10:00, Ann Smith <ann@example.com> a\nécrit :",
    "es": "El lun, 1 ene 2024 a las 10:00, Ann Smith (<ann@example.com>) escribió:",
    "it": "Il giorno lun 1 gen 2024 alle ore 10:00 Ann Smith <ann@example.com> ha\nscritto:",
    "nl": "Op ma 1 jan. 2024 om 10:00 schreef Ann Smith <ann@example.com>:",
    "nl-wrapped": "Op ma 1 jan. 2024 om 10:00 schreef Ann Smith <\nann@example.com>:",
    "pt": "Em seg., 1 de jan. de 2024 às 10:00, Ann Smith <ann@example.com> escreveu:",
    "ru": "пн, 1 янв. 2024 г. в 10:00, Ann Smith <ann@example.com>:",
    "ru-android": '01.01.2024 10:00 пользователь "Ann Smith" <ann@example.com> написал:',
    "uk": "пн, 1 січ. 2024 р. о 10:00 Ann Smith <ann@example.com> пише:",
    "pl": "pon., 1 sty 2024 o 10:00 Ann Smith <ann@example.com> napisał(a):",
    "cs": "po 1. 1. 2024 v 10:00 odesílatel Ann Smith <ann@example.com> napsal:",
    "sv": "Den mån 1 jan. 2024 kl 10:00 skrev Ann Smith <ann@example.com>:",
    "da": "man. 1. jan. 2024 kl. 10.00 skrev Ann Smith <ann@example.com>:",
    "no": "man. 1. jan. 2024 kl. 10:00 skrev Ann Smith <ann@example.com>:",
    "fi": "ma 1. tammik. 2024 klo 10.00 Ann Smith (ann@example.com) kirjoitti:",
    "hu": "Ann Smith <ann@example.com> ezt írta (időpont: 2024. jan. 1., H, 10:00):",
    "tr": "Ann Smith <ann@example.com>, 1 Oca 2024 Pzt, 10:00 tarihinde şunu yazdı:",
    "ja": "2024年1月1日(月) 10:00 Ann Smith <ann@example.com>:",
    "zh": "Ann Smith <ann@example.com> 于2024年1月1日周一 10:00写道：",
    "ko": "2024년 1월 1일 (월) 오전 10:00, Ann Smith <ann@example.com>님이 작성:",
    "en-wrapped-in-angle": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann@example.com\n> wrote:",
    "nl-apple": "Op 1 jan. 2024, om 10:00 heeft Ann Smith <ann@example.com> het volgende "
    "geschreven:",
    "name-only": "Ann Smith wrote:",
    "horde": "Quoting Ann Smith <ann@example.com>:",
    "horde-de": "Zitat von Ann Smith <ann@example.com>:",
    "gmail-iso-wrapped": "2017-11-24 16:32 GMT+01:00 Ann Smith <\nann@example.com>:",
    "gmail-old": "2024/1/1 Ann Smith <ann@example.com>",
    "android": "---- Ann Smith wrote ----",
    "sent": "On Mon, Jan 1, 2024 at 10:00 AM, Ann Smith <ann@example.com> sent:",
    "vi": "Vào 10:00 1 tháng 1, 2024, Ann Smith <ann@example.com> đã viết:",
}


@pytest.mark.parametrize("shape", sorted(HEADERS))
def test_a_quote_header_in_each_language_and_client_ends_the_answer(shape: str) -> None:
    mail = f"{ANSWER}\n\n{HEADERS[shape]}\n\n{QUOTE}"
    assert strip_reply(mail) == ANSWER


@pytest.mark.parametrize("shape", sorted(HEADERS))
def test_the_header_is_found_below_the_answer_without_a_blank_line(shape: str) -> None:
    assert strip_reply(f"{ANSWER}\n{HEADERS[shape]}\n{QUOTE}") == ANSWER


BLOCKS = {
    "outlook-en": "________________________________\nFrom: Ann Smith <ann@example.com>\n"
    "Sent: Monday, January 1, 2024 10:00 AM\nTo: Bob <bob@example.com>\nSubject: Ship?",
    "outlook-de": "-----Ursprüngliche Nachricht-----\nVon: Ann Smith <ann@example.com>\n"
    "Gesendet: Montag, 1. Januar 2024 10:00\nAn: Bob\nBetreff: Ship?",
    "outlook-de-bold": "*Von:* Ann Smith <ann@example.com>\n*Gesendet:* Montag, 1. Januar 2024\n"
    "*An:* Bob\n*Betreff:* Ship?",
    "outlook-fr": "De : Ann Smith <ann@example.com>\nEnvoyé : lundi 1 janvier 2024 10:00\n"
    "À : Bob\nObjet : Ship?",
    "outlook-es": "De: Ann Smith <ann@example.com>\nEnviado: lunes, 1 de enero de 2024 10:00\n"
    "Para: Bob\nAsunto: Ship?",
    "outlook-it": "Da: Ann Smith <ann@example.com>\nInviato: lunedì 1 gennaio 2024 10:00\n"
    "A: Bob\nOggetto: Ship?",
    "outlook-nl": "Van: Ann Smith <ann@example.com>\nVerzonden: maandag 1 januari 2024 10:00\n"
    "Aan: Bob\nOnderwerp: Ship?",
    "outlook-ru": "От: Ann Smith <ann@example.com>\nОтправлено: 1 января 2024 г. 10:00\n"
    "Кому: Bob\nТема: Ship?",
    "outlook-ko": "보낸사람: Ann Smith <ann@example.com>\n보낸날짜: 2024년 1월 1일 10:00\n"
    "받는사람: Bob\n제목: Ship?",
    "outlook-vi": "Từ: Ann Smith <ann@example.com>\nĐã gửi: Thứ Hai, 1 tháng 1, 2024 10:00\n"
    "Đến: Bob\nChủ đề: Ship?",
    "outlook-flat-cs": "Od: Ann Smith Odesláno: pondělí 1. ledna 2024 Komu: Bob Předmět: Ship?",
    "outlook-flat-pl": "Od: Ann Smith Wysłano: poniedziałek, 1 stycznia 2024 Do: Bob Temat: Ship?",
    "outlook-flat-sv": "Från: Ann Smith Skickat: den 1 januari 2024 Till: Bob Ämne: Ship?",
    "outlook-flat": "From: Ann Smith Sent: Monday, January 1, 2024 To: Bob Subject: Ship?",
    "original-fr": "-------- Message d'origine --------",
    "original-es": "-------- Mensaje original --------",
    "original-en": "-----Original Message-----",
}


@pytest.mark.parametrize("shape", sorted(BLOCKS))
def test_outlook_blocks_and_separators_end_the_answer(shape: str) -> None:
    mail = f"{ANSWER}\n\n{BLOCKS[shape]}\n\nShall we ship on Friday?\nAnn\n"
    assert strip_reply(mail) == ANSWER


def test_a_bottom_posted_answer_is_kept_not_the_greeting() -> None:
    header = "On Mon, Jan 1, 2024 at 10:00 AM Ann <ann@example.com> wrote:"
    mail = f"Hi Ann,\n\n{header}\n{QUOTE}\n{ANSWER}\n"
    # the question it answers shown above it (not the name signed under it)
    assert strip_reply(mail) == f"Hi Ann,\n\n> Shall we ship on Friday?\n{ANSWER}"
    assert strip_reply(f"{QUOTE}\n{ANSWER}\n") == f"> Shall we ship on Friday?\n{ANSWER}"
    assert strip_reply(f"> We shipped.\n\n{ANSWER}\n") == ANSWER  # it answers no question


def test_an_interleaved_answer_keeps_every_line_the_person_wrote() -> None:
    mail = (
        "On Mon, Jan 1, 2024 at 10:00 AM Ann <ann@example.com> wrote:\n"
        "> Ship on Friday?\n\nYes.\n\n> And the docs?\n\nDone, see the wiki.\n\n-- \nBob\n"
    )
    assert strip_reply(mail) == "> Ship on Friday?\nYes.\n\n> And the docs?\nDone, see the wiki."


def test_a_forward_with_no_comment_passes_the_forwarded_mail_on_marked() -> None:
    mail = (
        "---------- Forwarded message ---------\nFrom: Ann <ann@example.com>\n"
        "Date: Mon, Jan 1, 2024 at 10:00 AM\nSubject: Ship?\nTo: Bob <bob@example.com>\n\n"
        "Shall we ship on Friday?\n"
    )
    text = strip_reply(mail)
    assert text.startswith(FORWARDED) and text.endswith("Shall we ship on Friday?")
    assert "From: Ann <ann@example.com>" in text


def test_leftover_separators_and_mobile_footers_are_removed() -> None:
    for footer in ("Sent from my iPhone", "Von meinem iPhone gesendet", "Envoyé de mon iPad"):
        assert strip_reply(f"{ANSWER}\n\n{footer}\n\n-----\n{QUOTE}") == ANSWER
    assert strip_reply(f"{ANSWER}\n\nSent from my desk, which is easier.") == (
        f"{ANSWER}\n\nSent from my desk, which is easier."
    )


def test_body_lines_that_only_look_like_headers_are_kept() -> None:
    text = "On Thursday I wrote the report.\nFrom: the team's point of view it is done.\nThanks"
    assert strip_reply(text).startswith("On Thursday I wrote the report.\nFrom: the team's")
    code = "Run this:\n\n    make test\n    make deploy\n"
    assert strip_reply(code) == "Run this:\n\n    make test\n    make deploy"


@pytest.mark.parametrize(
    "block",
    [
        "Date: Mon, 1 Jan 2024 10:00\nFrom: Ann <ann@example.com>\nTo: Bob\nSubject: Ship?",
        "Sent: Monday, 1 January 2024\nFrom: Ann <ann@example.com>\nSubject: Ship?",
        "To: Bob <bob@example.com>\nSubject: Ship?\nDate: Mon, 1 Jan 2024",
        "Betreff: Ship?\nDatum: Mo., 1. Jan. 2024\nAn: Bob",
        "Date: Mon, 1 Jan 2024 10:00\n\nFrom: Ann <ann@example.com>\n\nTo: Bob\n\nSubject: Ship?",
    ],
)
def test_an_embedded_mail_is_cut_at_its_headers_whatever_their_order(block: str) -> None:
    assert strip_reply(f"{ANSWER}\n\n{block}\n\nShall we ship on Friday?\n") == ANSWER


def test_a_reply_followed_by_an_interleaved_answer_keeps_both() -> None:
    mail = "I agree with most of it.\n\n> Ship on Friday?\n\nYes.\n\n> And the docs?\n\nLater.\n"
    assert strip_reply(mail) == (
        "I agree with most of it.\n\n> Ship on Friday?\nYes.\n\n> And the docs?\nLater."
    )


def test_history_below_an_interleaved_answer_is_not_kept() -> None:
    mail = (
        "Mostly fine.\n\n> Ship on Friday?\n\nYes.\n\n"
        "From: Ann <ann@example.com>\nSent: Monday\nTo: Bob\n\nOlder text.\n"
    )
    assert strip_reply(mail) == "Mostly fine.\n\n> Ship on Friday?\nYes."


def test_a_forward_quoted_by_the_client_is_passed_on_unquoted() -> None:
    mail = (
        "\nBegin forwarded message:\n\n> From: Ann <ann@example.com>\n"
        "> Date: Mon, 1 Jan 2024\n> Subject: Ship?\n>\n> Shall we ship on Friday?\n"
    )
    text = strip_reply(mail)
    assert text.startswith(FORWARDED) and text.endswith("\n\nShall we ship on Friday?")
    assert "\nFrom: Ann <ann@example.com>\n" in text
    assert not any(line.startswith(">") for line in text.split("\n"))


def test_a_forward_of_a_forward_passes_on_the_innermost_mail() -> None:
    rule = "---------- Forwarded message ----------"
    outer = f"{rule}\nFrom: Bob <bob@example.com>\nSubject: Fwd: Ship?"
    inner = f"{rule}\nFrom: Ann <ann@example.com>\nSubject: Ship?"
    text = strip_reply(f"{outer}\n\n\n{inner}\n\nShall we ship on Friday?\n")
    assert text == f"{FORWARDED}\n{inner}\n\nShall we ship on Friday?"


@pytest.mark.parametrize(
    "marker",
    ["##- Please type your reply above this line -##", "-- Reply above this line --"],
)
def test_a_reply_above_this_line_marker_cuts_the_history(marker: str) -> None:
    mail = f"{ANSWER}\n\n{marker}\n\nYour request #42 was updated.\nAnn: shall we ship?\n"
    assert strip_reply(mail) == ANSWER


#: quote headers a client wrapped over two to four lines, in the languages that do it
WRAPPED = {
    "en": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann@example.com>\nwrote:",
    "en-angle": "On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <\nann@example.com> wrote:",
    "en-3": "On Mon, Jan 1, 2024 at 10:00 AM,\nAnn Smith <ann@example.com>\nwrote:",
    "de": "Am 01.01.2024 um 10:00 schrieb Ann Smith\n<ann@example.com>:",
    "fr": "Le lun. 1 janv. 2024 à 10:00,\nAnn Smith <ann@example.com>\na écrit :",
    "es": "El lun., 1 ene. 2024 a las 10:00,\nAnn Smith (<ann@example.com>)\nescribió:",
    "it": "Il giorno lun 1 gen 2024 alle ore 10:00\nAnn Smith <ann@example.com>\nha scritto:",
    "nl": "Op 1 jan. 2024, om 10:00\nheeft Ann Smith <ann@example.com>\nhet volgende geschreven:",
    "en-4": "On Mon, Jan 1, 2024 at 10:00 AM, Ann Smith (Ops) via\nShip Group <\n"
    "ship-group+unsubscribe@example.com\n> wrote:",
}
OLDER = "On Sun, Dec 31, 2023 at 9:00 AM Bob <bob@example.com> wrote:"


@pytest.mark.parametrize("shape", sorted(WRAPPED))
def test_older_history_under_a_wrapped_header_is_not_kept_as_an_answer(shape: str) -> None:
    header = WRAPPED[shape]
    stacked = f"{ANSWER}\n\n> Shall we?\n\n{header}\n\nFriday works.\n\n{OLDER}\n\nShall we?\n"
    assert strip_reply(stacked) == ANSWER  # a stacked thread below a bare quote
    quoted = f"{ANSWER}\n\n> Shall we?\n\n{header}\n> Friday works.\n>> Shall we?\n"
    assert strip_reply(quoted) == ANSWER  # the same thread, quoted
    older = f"> Ship on Friday?\n\nYes.\n\n{header}\n\nOlder.\n"
    assert strip_reply(older) == "> Ship on Friday?\nYes."


def test_answers_below_quotes_under_wrapped_headers_are_kept_whole() -> None:
    header = WRAPPED["en-angle"]
    shown = f"Hi Ann,\n\n> Shall we ship on Friday?\n{ANSWER}"
    assert strip_reply(f"Hi Ann,\n\n{header}\n{QUOTE}\n{ANSWER}\n") == shown
    mail = f"{header}\n> Ship on Friday?\n\nYes.\n\n{WRAPPED['de']}\n> Docs?\n\nDone.\n"
    assert strip_reply(mail) == "> Ship on Friday?\nYes.\n\n> Docs?\nDone."


def test_a_zoho_forward_with_no_comment_keeps_its_headers() -> None:
    rule = "============ Forwarded message ============"
    head = f"{rule}\nFrom : Ann <ann@example.com>\nDate : Mon, 01 Jan 2024 10:00\nSubject : Ship?"
    text = strip_reply(f"{head}\n{rule}\n\nShall we ship on Friday?\n")
    assert text == f"{FORWARDED}\n{head}\n{rule}\n\nShall we ship on Friday?"


def test_a_forward_under_only_a_signature_or_a_greeting_is_passed_on() -> None:
    rule = "---------- Forwarded message ---------"
    forward = f"{rule}\nFrom: Ann <ann@example.com>\nSubject: Ship?\n\nShall we ship on Friday?"
    assert strip_reply(f"\n\n-- \nBob Jones\nACME\n\n{forward}\n") == f"{FORWARDED}\n{forward}"
    assert strip_reply(f"Hi Carol,\n\n{forward}\n") == f"Hi Carol,\n\n{FORWARDED}\n{forward}"
    assert strip_reply(f"FYI, see below.\n\n{forward}\n") == "FYI, see below."


def test_a_bare_quote_under_a_loose_intro_keeps_the_answers_below_it() -> None:
    mail = "I agree with most of it.\n\nAnn wrote\n> Ship on Friday?\n\nYes.\n"
    assert strip_reply(mail) == "I agree with most of it.\n\n> Ship on Friday?\nYes."


def _html_mail(html: str) -> bytes:
    head = "From: Bob <bob@example.com>\r\nSubject: Re: Ship?\r\nContent-Type: text/html\r\n\r\n"
    return (head + html).encode()


def test_an_html_forward_and_an_html_signature_read_like_plain_ones() -> None:
    forward = (
        "<div>-- <br>Bob</div><div>---------- Forwarded message ---------<br>"
        "From: Ann &lt;ann@example.com&gt;<br>Subject: Ship?</div><div>Shall we ship?</div>"
    )
    text = parse_mail(_html_mail(forward), 20_000).text
    assert text.startswith(FORWARDED) and text.endswith("\n\nShall we ship?")
    signed = f"<div>{ANSWER}</div><div>-- <br>Bob Jones<br>ACME</div>"
    assert parse_mail(_html_mail(signed), 20_000).text == ANSWER


BARE_DATE = "2026-11-20 14:03 Alice Example <alice@example.com>"


def test_pipe_quoted_history_under_a_bare_date_and_name_line_is_cut() -> None:
    mail = f"{ANSWER}\n\n{BARE_DATE}\n| Shall we ship on Friday?\n|\n| Alice\n"
    assert strip_reply(mail) == ANSWER
    de = "Am 20.11.2026 um 14:03 schrieb Alice <alice@example.com>:"
    assert strip_reply(f"{ANSWER}\n\n{de}\n| Shall we ship on Friday?\n") == ANSWER


def test_answers_between_pipe_quotes_are_kept_with_their_questions() -> None:
    mail = f"{BARE_DATE}\n| Which region?\n\nEU.\n\n| How many?\n|\n| Alice\n\nFour.\n"
    assert strip_reply(mail) == "> Which region?\nEU.\n\n> How many?\nFour."


def test_a_table_a_person_writes_is_not_taken_for_a_pipe_quote() -> None:
    table = "Here are the numbers:\n\n| region | servers |\n| EU | 4 |\n"
    assert strip_reply(table) == table.strip()


def test_the_context_is_the_question_and_at_most_three_lines_of_it() -> None:
    long = "\n".join(f"> line {n} of a long question" for n in range(6)) + "?"
    assert strip_reply(f"{long}\n\nYes.\n") == (
        "> line 3 of a long question\n> line 4 of a long question\n"
        "> line 5 of a long question?\nYes."
    )
    asked = "> Which region?\n>\n> I can also check prices later.\n\nEU.\n"
    assert strip_reply(asked) == "> Which region?\nEU."


def test_inline_answers_between_html_blockquotes_keep_their_questions() -> None:
    html = (
        "<div>Hi Alice,</div><div>On Mon, 23 Nov 2026 at 09:12, Alice &lt;bot@example.com&gt; "
        "wrote:</div><blockquote><div>1. Which region?</div></blockquote><div>EU.</div>"
        "<blockquote><div>2. How many?</div><div>Alice</div></blockquote><div>Four.</div>"
    )
    assert parse_mail(_html_mail(html), 20_000).text == (
        "Hi Alice,\n\n> 1. Which region?\nEU.\n\n> 2. How many?\nFour."
    )


def test_a_reply_above_a_forward_keeps_the_reply_and_drops_the_forward() -> None:
    for marker, head in (
        ("---------- Forwarded message ---------", "From: Carol <carol@example.com>"),
        ("---------- Weitergeleitete Nachricht ---------", "Von: Carol <carol@example.com>"),
        ("-------- Message transféré --------", "De : Carol <carol@example.com>"),
    ):
        mail = f"Use these numbers.\n\n{marker}\n{head}\nSubject: Q3\n\nRevenue 1.2M\n"
        assert strip_reply(mail) == "Use these numbers."
