"""Auto-capture: what a person says outright ("remember ...", "I prefer ...", "we
decided ...") is noted even when the model calls no tool (reference 001).

Only a person's messages are scanned, sentence by sentence; a trigger must open the
sentence (after a courtesy like "please" or "btw"), and questions are skipped, so
"do you remember what we decided?" captures nothing. Deduplication happens where the
note is written (`AgentMemory.capture`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
        re.compile(_LEAD + r"(?:we(?:'ve| have)? decided|we agreed|let'?s go with|the plan is)\s"),
    ),
]
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_MIN_CHARS = 8


@dataclass(frozen=True, slots=True)
class Capture:
    kind: str  # remember | preference | decision
    text: str  # the sentence as the person wrote it


def captures(message: str) -> list[Capture]:
    found: list[Capture] = []
    for match in _SENTENCE.finditer(message):
        sentence = match.group().strip()
        if len(sentence) < _MIN_CHARS or sentence.endswith("?"):
            continue
        for kind, pattern in _TRIGGERS:
            if pattern.match(sentence.lower()):
                found.append(Capture(kind, sentence))
                break
    return found


def normalised(text: str) -> str:
    """Words only, lower case: what deduplication compares."""
    return " ".join(re.findall(r"\w+", text.lower()))
