"""Auto-capture: what a person says outright ("remember ...", "I prefer ...", "we
decided ...", "my name is ...", "I'm in Berlin") is noted even when the model calls
no tool (reference 001).

Kinds: `remember`, `preference`, `name` and `place` (the speaking person's own
profile, never text every conversation's prompt carries; a place that names a time
zone, "I'm in Berlin" or "I'm in Europe/Berlin", also becomes the person's zone),
`decision` (the team's decisions log). "I'm in a meeting" names no zone and captures
nothing.

Only a person's messages are scanned, sentence by sentence; a trigger must open the
sentence (after a courtesy like "please" or "btw"), and questions are skipped, so
"do you remember what we decided?" captures nothing. Deduplication happens where the
note is written (`AgentMemory.capture`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.inbox.people import zone_for_place

_LEAD = r"^(?:(?:please|also|btw|and|so|ok|okay|fyi|oh|hey)[,:]?\s+)*"
_TRIGGERS: list[tuple[str, re.Pattern[str]]] = [
    (
        "remember",
        re.compile(
            _LEAD + r"(?:remember|don'?t forget|keep in mind|note that)(?:\s+that)?[,:]?\s+\S"
        ),
    ),
    ("preference", re.compile(_LEAD + r"(?:i'?d prefer|i prefer|i always|i never|i like)\s")),
    (
        "decision",
        re.compile(
            _LEAD + r"(?:we(?:'ve| have)? decided|we(?:'ve| have)? agreed|let'?s go with|"
            r"the plan is|we'?ll use|we will use|we'?re going with)\s"
        ),
    ),
    ("name", re.compile(_LEAD + r"(?:my name is|call me|i go by)\s+(?P<value>\S.*)$")),
    (
        "place",
        re.compile(
            _LEAD + r"(?:i'?m|i am)\s+(?:now\s+|currently\s+)?(?:based\s+|working\s+|located\s+)?"
            r"in\s+(?P<value>[a-z][a-z_/ +-]{1,40}?)(?:\s+(?:now|these days|this week))?[.!]*$"
        ),
    ),
]
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_MIN_CHARS = 8


@dataclass(frozen=True, slots=True)
class Capture:
    kind: str  # remember | preference | decision | name | place
    text: str  # the sentence as the person wrote it
    value: str = ""  # name: the name; place: the IANA zone it names


def captures(message: str) -> list[Capture]:
    found: list[Capture] = []
    for match in _SENTENCE.finditer(message):
        sentence = match.group().strip()
        if len(sentence) < _MIN_CHARS or sentence.endswith("?"):
            continue
        for kind, pattern in _TRIGGERS:
            hit = pattern.match(sentence.lower())
            if hit is None:
                continue
            value = _value(kind, sentence, pattern)
            if value is not None:
                found.append(Capture(kind, sentence, value))
            break
    return found


def normalised(text: str) -> str:
    """Words only, lower case: what deduplication compares."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _value(kind: str, sentence: str, pattern: re.Pattern[str]) -> str | None:
    """What the sentence names (None: not a capture after all)."""
    if kind not in ("place", "name"):
        return ""
    # again on the sentence as written (case kept), ignoring case this time
    hit = re.compile(pattern.pattern, re.IGNORECASE).match(sentence)
    if hit is None:
        return None
    if kind == "place":
        return zone_for_place(hit.group("value"))
    name = hit.group("value").strip().rstrip(".!")
    return name if 0 < len(name) <= 60 else None
