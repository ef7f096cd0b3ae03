"""The new part of a reply: quoted history, signatures and mobile footers stripped.

`strip_reply` is the one entry point; parse.py calls it on the body it chose. It finds
where the quoted history starts (reply_patterns: "On ... wrote:" in many languages and
client shapes, separators, Outlook header blocks, `>` quotes), keeps what the person
wrote above it (or, for a bottom-posted or interleaved answer, the person's lines between
and below the quotes), passes a forward with no comment on marked as forwarded, then
lets mail-parser-reply cut the signature. Pure functions of text, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mailparser_reply.constants import MAIL_LANGUAGES
from mailparser_reply.parser import EmailMessage as ReplyText

from channels.email import reply_patterns as pat
from channels.email.inline import Segment, is_quote, render

_SHELF = re.compile(r"\x01(\d+)\x01")
#: a signature delimiter as the HTML converter escapes it ("\-- "): made plain "-- "
_HTML_DELIMITER = re.compile(r"^\\--[ \t]*$", re.MULTILINE)
LONG_LINE = 200
#: every language mail-parser-reply ships signatures for ("david" is a test fixture)
REPLY_LANGUAGES = tuple(lang for lang in MAIL_LANGUAGES if lang != "david")
#: what a forward with no comment of its own is handed on under
FORWARDED = "[forwarded message]"
HEADER_SPAN = 4  # a quote header a client wrapped over at most this many lines
BLOCK_RUN = 3  # header lines in a row that make an embedded mail's block, whatever comes first
NESTED_FORWARDS = 8  # forwards of forwards looked through for the one that says something
_NEVER = re.compile(r"(?!)")


@dataclass(frozen=True, slots=True)
class Cut:
    """Where the quoted history starts: line `index`, and what kind of marker is there."""

    index: int
    kind: str  # "quote" | "header" | "separator" | "forward" | "block" | "footer"


def strip_reply(text: str) -> str:
    """The new part of a reply: no quoted history, no signature; answers between quotes
    with the quoted lines they answer (inline.py); the whole text when stripping leaves
    nothing (a mail that is all quote, or answered inside the quote, says nothing new
    outside it: nothing is lost)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").replace("\x01", "")
    text = _HTML_DELIMITER.sub("-- ", text)
    lines = text.split("\n")
    cut = find_cut(lines)
    answer = lines if cut is None else _answer(lines, cut)
    if FORWARDED in answer:
        return "\n".join(answer).strip()
    latest = _without_signature("\n".join(_trim_tail(answer)))
    return latest.strip() or text.strip()


def find_cut(lines: list[str]) -> Cut | None:
    """The first line where quoted history starts, or None when there is none."""
    for i, line in enumerate(lines):
        if len(line) <= LONG_LINE and (kind := _marker(lines, i)):
            return Cut(i, kind)
    return None


def _marker(lines: list[str], i: int) -> str | None:
    if kind := _history(lines, i):
        return kind
    span, strict = _header_at(lines, i)
    return ("header" if strict else "quote") if span else None  # a loose one: a quote's


def _history(lines: list[str], i: int) -> str | None:
    """What older history opens at line `i`, other than a quote header."""
    s = lines[i].strip()
    if not s:
        return None
    if s.startswith(">"):
        return "quote"
    if pat.FORWARD.match(s):
        return "forward"
    if pat.SEPARATOR.match(s) or pat.REPLY_ABOVE.match(s):
        return "separator"
    if pat.DISCLAIMER.match(s) or pat.LIST_RULE.match(s):
        return "footer"
    if _opens_block(lines, i) or (pat.RULE.match(s) and _block_follows(lines, i)):
        return "block"
    return None


def _opens_block(lines: list[str], i: int) -> bool:
    """`From: ...` followed by `Sent:`/`To:`/`Subject:` (inline or on the next lines), or
    an embedded mail's headers in any order (`Date:`, `To:`, `Subject:`) three in a row."""
    s = lines[i].strip()
    if not pat.FROM_LINE.match(s):
        return _header_run(lines, i) >= BLOCK_RUN
    if pat.BLOCK_INLINE.search(s[:LONG_LINE]):
        return True
    near = [x for x in lines[i + 1 : i + 6] if x.strip()][:3]
    return any(len(x) <= LONG_LINE and pat.BLOCK_LINE.match(x.strip()) for x in near)


def _header_run(lines: list[str], i: int) -> int:
    """How many different header names open the lines from `i` on, one per line (blank
    lines between them, as an HTML part's text has them, are passed over)."""
    names: set[str] = set()
    for line in lines[i : i + 2 * (BLOCK_RUN + 3)]:
        s = line.strip()
        if not s:
            continue
        if len(s) > LONG_LINE or not (pat.BLOCK_LINE.match(s) or pat.FROM_LINE.match(s)):
            break
        names.add(re.split(r"[:\uff1a]", s, maxsplit=1)[0].strip("*> ").lower())
    return len(names)


def _block_follows(lines: list[str], i: int) -> bool:
    near = [j for j in range(i + 1, min(i + 4, len(lines))) if lines[j].strip()][:2]
    return any(_opens_block(lines, j) or _is_header(lines, j) for j in near)


def _is_header(lines: list[str], i: int) -> bool:
    return _header_at(lines, i)[1]


def _header_at(lines: list[str], i: int) -> tuple[int, bool]:
    """How many lines the quote header at `i` covers (0: none there), and whether it is
    a whole header: "On <date>, <name> wrote:" in any language, wrapped over up to four
    lines (even inside `<addr>`), Zoho's "---- On ... wrote ----", Gmail's "2017-11-24
    16:32 GMT+01:00 Name <addr>:"; not whole: a looser intro of a `>` quote right below
    it (pat.QUOTE_INTRO)."""
    joined = ""
    for k, line in enumerate(lines[i : i + HEADER_SPAN]):
        s = line.strip()
        unclosed = joined.count("<") > joined.count(">")
        glued = k > 0 and (joined.endswith("<") or (s.startswith(">") and unclosed))
        if len(line) > LONG_LINE or not s or (s.startswith(">") and not glued):
            break
        if k and (not pat.HEADER_START.match(joined) or pat.HEADER_OPEN.match(s)):
            break  # only a header's first line goes on below, not into another
        joined = f"{joined}{'' if glued or not k else ' '}{s}"
        text = joined.strip("-=* ")
        if pat.WROTE.match(text) or pat.DATED_ADDRESS.match(text):
            return k + 1, True
        if _quote_at(lines, i + k + 1) and pat.QUOTE_INTRO.match(text):
            return k + 1, False
    return 0, False


def _quote_at(lines: list[str], i: int) -> str:
    """The mark (`>` or `|`) of the quote the next line from `i` that says anything
    opens; "" when it is no quote."""
    nxt = next((x.strip() for x in lines[i : i + HEADER_SPAN] if x.strip()), "")
    return nxt[:1] if is_quote(nxt, pipes=True) else ""


def _answer(lines: list[str], cut: Cut) -> list[str]:
    """What the person wrote, given where the quoted history starts. A signature alone
    above a forward or an unquoted mail says nothing, so that mail is passed on; so it is
    under a greeting above a forward (the greeting kept)."""
    head = _trim_tail(lines[: cut.index])
    said = _above_signature(head)
    below = _unquoted_after(lines, cut.index)
    if _says_something(said):  # text, then a bare quote: an answer between the quotes
        return head + below if cut.kind == "quote" and below else head
    if below or cut.kind == "quote" or (said and cut.kind != "forward"):
        return head + below
    return [*said, *([""] if said else []), *_forwarded(lines, cut.index)]


def _forwarded(lines: list[str], start: int) -> list[str]:
    """A forward (or a quoted mail) with no comment: the forwarded mail itself (taken out
    of its `>` quote if the client quoted it), its header lines kept (who wrote it, when),
    up to the history quoted inside it; for a forward of a forward with nothing said in
    between, the innermost mail."""
    rest, end, nested = _forward_body(lines, start)
    for _ in range(NESTED_FORWARDS):
        if not nested:
            break
        lines, start = rest, end
        rest, end, nested = _forward_body(lines, start)
    return [FORWARDED, *_trim_tail([lines[start], *rest[:end]])]


def _forward_body(lines: list[str], start: int) -> tuple[list[str], int, bool]:
    """The lines below the forward marker at `start` (unquoted), where the forwarded
    mail ends in them, and whether it is only headers above another forward."""
    rest = _unquoted_once(lines[start + 1 :])
    body = 0
    while body < len(rest) and (_header_line(rest[body]) or _closes(rest, body, lines[start])):
        body += 1
    inner = find_cut(rest[body:])
    if inner is None:
        return rest, len(rest), False
    end = body + inner.index
    return rest, end, inner.kind in ("forward", "separator") and not rest[body:end]


def _closes(rest: list[str], i: int, marker: str) -> bool:
    """Zoho's forward repeats its marker line right under the forwarded headers."""
    return i > 0 and bool(rest[i - 1].strip()) and rest[i].strip() == marker.strip()


def _unquoted_once(lines: list[str]) -> list[str]:
    """`lines` less one level of `>` quote, up to where the quote ends, when they open
    with a quote; else as they are."""
    if not next((x for x in lines if x.strip()), "").lstrip().startswith(">"):
        return lines
    out: list[str] = []
    for line in lines:
        s = line.lstrip()
        if s and not s.startswith(">"):
            break
        out.append(s[1:].removeprefix(" "))
    return out


def _header_line(line: str) -> bool:
    s = line.strip()
    return not s or bool(pat.FROM_LINE.match(s) or pat.BLOCK_LINE.match(s))


def _above_signature(head: list[str]) -> list[str]:
    """`head` up to a "-- " signature delimiter."""
    return next((head[:k] for k, x in enumerate(head) if x.rstrip() == "--"), head)


def _says_something(head: list[str]) -> bool:
    """More than a greeting: "Hi," above a quote is not the answer."""
    said = [x for x in head if x.strip()]
    return any(not pat.GREETING.match(x) for x in said)


def _unquoted_after(lines: list[str], start: int) -> list[str]:
    """A bottom-posted or interleaved answer: the unquoted lines after quotes (`>`, or
    `|` under a quote header), without the quote headers between them, up to older
    history (a forward, a separator, a header block, or a quote header over unquoted
    text: a stacked thread); interleaved answers come with the lines they answer."""
    segments: list[Segment] = []
    pipes = False
    i = start
    while i < len(lines):
        s = lines[i].strip()
        if span := _header_at(lines, i)[0]:
            mark = _quote_at(lines, i + span)
            if not mark:
                break  # an older mail of a stacked thread, not quoted: nobody's answer
            pipes, i = pipes or mark == "|", i + span
            continue
        if is_quote(s, pipes):
            if not segments or segments[-1].answer:
                segments.append(Segment())
            segments[-1].quote.append(lines[i])
        elif _history(lines, i):
            break  # older history, or a list's or a server's footer: nobody's words
        elif segments and (s or _open(segments[-1].answer)):
            segments[-1].answer.append(lines[i])
        i += 1
    kept = render(segments)
    return kept if any(x.strip() for x in kept) else []


def _open(answer: list[str]) -> bool:
    """Whether a blank line may follow: the answer has a last line that says something."""
    return bool(answer) and bool(answer[-1].strip())


def _trim_tail(lines: list[str]) -> list[str]:
    """Drop what a cut leaves behind at the end: blank lines, rules, separators,
    a bare `>` quote, a mobile footer, a lone signature delimiter."""
    out = list(lines)
    while out and _leftover(out[-1]):
        out.pop()
    return out


def _leftover(line: str) -> bool:
    s = line.strip()
    return (
        not s
        or s.startswith(">")
        or bool(pat.LEFTOVER_RULE.match(s) or pat.SEPARATOR.match(s))
        or bool(pat.MOBILE_FOOTER.match(s))
    )


def _without_signature(text: str) -> str:
    """mail-parser-reply's cut of signatures and disclaimers, on the answer alone (its
    quote headers are ours to find: its header pattern is one that never matches)."""
    shelved, short = _shelve_long_lines(text)
    try:
        parsed = ReplyText(
            text=short,
            languages=list(REPLY_LANGUAGES),
            keep_hyphen_lists=True,
            _header_regex=_NEVER,
        )
        replies = parsed.read().replies
        latest = replies[0].body if replies else short
    except Exception:
        latest = short
    original = short.split("\n")
    kept = _trim_tail(_as_written(original, latest.split("\n")))
    if not _says_something(kept):  # a signature pattern took the answer with it
        kept = _trim_tail(original)
    return _SHELF.sub(lambda m: shelved[int(m.group(1))], "\n".join(kept))


def _as_written(original: list[str], body: list[str]) -> list[str]:
    """The lines of `original` that `body` keeps, as written: the reply parser strips
    every line, which would lose the indentation of code and lists."""
    want = [x.strip() for x in body]
    j, first = 0, 0
    for i, line in enumerate(original):
        if j < len(want) and line.strip() == want[j]:
            first = i if j == 0 else first
            j += 1
            if j == len(want):
                return original[first : i + 1]
    return body


def _shelve_long_lines(text: str) -> tuple[list[str], str]:
    """Swap lines too long to be a "wrote:" header or a signature for short tokens.

    The reply parser's header patterns backtrack badly on very long lines (seconds on
    one 10 KB line); no real quote header is that long, so it never sees them.
    """
    shelved: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > LONG_LINE:
            lines[i] = f"\x01{len(shelved)}\x01"
            shelved.append(line.strip())
    return shelved, "\n".join(lines)
