"""The mail corpus (tests/email/corpus/): its fixtures as raw mails, and how an answer is scored.

LABELS.tsv names each fixture's role: `reply` (a person's answer, with the expected
reply beside it as `<file>.expected.txt`), `machine` (a bounce, auto-reply, report or
list mail that must be flagged) or `person` (an ordinary mail that must not be).
Fixtures that are only a body (the reply parsers' `.txt`, talon's `.html`) get a
minimal header wrapped around their unchanged bytes, so every fixture goes through
`parse_mail`, the path a real mail takes. Shared by the corpus test and the bench.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
SIGNOFF_LINES = 3  # a sign-off: at most this many short lines after the answer
SIGNOFF_WIDTH = 40
_WS = re.compile(r"[ \t\u00a0\u200b]+")


@dataclass(frozen=True, slots=True)
class Fixture:
    name: str  # path under corpus/
    role: str  # "reply" | "machine" | "person"
    language: str
    client: str

    @property
    def path(self) -> Path:
        return CORPUS / self.name

    def raw(self) -> bytes:
        data = self.path.read_bytes()
        if self.path.suffix == ".eml":
            return data
        kind = "html" if self.path.suffix == ".html" else "plain"
        head = (
            "From: Person <person@example.org>\r\nTo: bot@example.org\r\n"
            f"Subject: Re: corpus\r\nMessage-ID: <{self.name}@corpus.invalid>\r\n"
            f"Content-Type: text/{kind}; charset=utf-8\r\n\r\n"
        )
        return head.encode() + data

    def expected(self) -> str:
        return (CORPUS / f"{self.name}.expected.txt").read_text(encoding="utf-8")


def fixtures() -> list[Fixture]:
    rows = (CORPUS / "LABELS.tsv").read_text(encoding="utf-8").splitlines()
    return [Fixture(*row.split("\t")) for row in rows if row and not row.startswith("#")]


def _lines(text: str) -> list[str]:
    return [_WS.sub(" ", x).strip() for x in text.replace("\r", "").split("\n") if x.strip()]


def _signoff(extra: list[str]) -> bool:
    return len(extra) <= SIGNOFF_LINES and all(len(x) <= SIGNOFF_WIDTH for x in extra)


def score(got: str, expected: str) -> str:
    """`expected` (the reply, give or take a sign-off), `usable` (every line of the reply
    there and at most a few short lines besides, none of them quoted), or `miss`."""
    have, want = _lines(got), _lines(expected)
    if have == want:
        return "expected"
    n = min(len(have), len(want))
    if have[:n] == want[:n] and _signoff(have[n:] + want[n:]):
        return "expected"
    extra = [x for x in have if x not in want]
    quoted = any(x.startswith(">") for x in extra)
    if all(x in have for x in want) and len(extra) <= SIGNOFF_LINES and not quoted:
        return "usable"
    return "miss"
