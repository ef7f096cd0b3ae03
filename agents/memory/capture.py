"""Auto-capture: what a person says outright ("remember ...", "I prefer ...", "I hate
...", "we decided ...", "my name is ...", "I work at ...", "I'm in Berlin", "the API URL
is ...") is noted even when the model calls no tool (reference 001, MEMORY_TRIGGERS).

Kinds: `remember`, `preference` (also "I hate / love / dislike"), `name`, `place` and
`about` ("I work at / for ...", "I'm from ...", "our company is ...") go to the
speaking person's own profile, never text every conversation's prompt carries (a place
that names a time zone, "I'm in Berlin" or "I'm in Europe/Berlin", also becomes the
person's zone; "I'm in a meeting" names none and captures nothing). `decision` goes to
the team's decisions log and `fact` ("the API URL / port / endpoint / host is ...") to
the team's `facts` note, where a newer value of the same thing replaces the older one
(`value` holds the subject, "api url"). A sentence that holds anything shaped like a
secret (a token, `key=...`, a password in a URL) is never captured.

Only a person's messages are scanned (`captures`), and an agent's own replies for its
decisions (`decisions_in`): never a tool's result, a fetched page, a file or a hook's
payload, which are data. Sentence by sentence; a trigger must open the sentence (after a
courtesy like "please" or "btw"), and questions are skipped, so "do you remember what
we decided?" captures nothing. Deduplication happens where the note is written
(`AgentMemory.capture`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.redact import Redactor
from bot.inbox.people import zone_for_place

_LEAD = r"^(?:(?:please|also|btw|and|so|ok|okay|fyi|oh|hey)[,:]?\s+)*"
_TRIGGERS: list[tuple[str, re.Pattern[str]]] = [
    (
        "remember",
        re.compile(
            _LEAD + r"(?:remember|don'?t forget|keep in mind|note that)(?:\s+that)?[,:]?\s+\S"
        ),
    ),
    (
        "preference",
        re.compile(
            _LEAD + r"(?:i'?d prefer|i prefer|i always|i never|i like|i love|i hate|i dislike|"
            r"i (?:really )?(?:do not|don'?t) like|i can'?t stand)\s"
        ),
    ),
    (
        "decision",
        re.compile(
            _LEAD + r"(?:we(?:'ve| have)? decided|we(?:'ve| have)? agreed|let'?s go with|"
            r"the plan is|we'?ll use|we will use|we'?re going with)\s"
        ),
    ),
    ("name", re.compile(_LEAD + r"(?:my name is|call me|i go by)\s+(?P<value>\S.*)$")),
    (
        "about",
        re.compile(
            _LEAD + r"(?:i (?:work|am working) (?:at|for)|i'?m working (?:at|for)|i'?m from|"
            r"i am from|i come from|our company(?:'s name)? is|our company is called)\s+\S"
        ),
    ),
    (
        "fact",
        re.compile(
            _LEAD + r"(?:the|our)\s+(?P<value>(?:[\w.-]+\s+){0,3}?(?:api|url|uri|endpoint|"
            r"port|host|hostname|address|domain|base url|api url|dashboard))\s+(?:is|=|:)\s+\S"
        ),
    ),
    (
        "place",
        re.compile(
            _LEAD + r"(?:i'?m|i am)\s+(?:now\s+|currently\s+)?(?:based\s+|working\s+|located\s+)?"
            r"in\s+(?P<value>[a-z][a-z_/ +-]{1,40}?)(?:\s+(?:now|these days|this week))?[.!]*$"
        ),
    ),
]
#: a sentence ends at . ! ? before a space or the end ("https://api.acme.test/v2" is whole)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+[.!?]*")
_MIN_CHARS = 8


@dataclass(frozen=True, slots=True)
class Capture:
    kind: str  # remember | preference | about | decision | fact | name | place
    text: str  # the sentence as the person wrote it
    value: str = ""  # name: the name; place: the IANA zone it names; fact: its subject


#: the kinds a person's words may hold, and the one an agent's own words may
PERSON_KINDS = frozenset(kind for kind, _ in _TRIGGERS)
AGENT_KINDS = frozenset({"decision"})
TEAM_KINDS = frozenset({"decision", "fact"})  # what every agent then reads
_SECRETS = Redactor()


def captures(message: str, kinds: frozenset[str] = PERSON_KINDS) -> list[Capture]:
    found: list[Capture] = []
    for match in _SENTENCE.finditer(message):
        sentence = match.group().strip()
        if len(sentence) < _MIN_CHARS or sentence.endswith("?"):
            continue
        lowered = sentence.lower()
        # the first trigger that matches decides; most sentences match none, so the
        # secrets check (every pattern of bot/core/redact.py) runs only for one that does
        hit = next((t for t in _TRIGGERS if t[0] in kinds and t[1].match(lowered)), None)
        if hit is None or _SECRETS.redact(sentence) != sentence:  # never keep a secret
            continue
        value = _value(hit[0], sentence, hit[1])
        if value is not None:
            found.append(Capture(hit[0], sentence, value))
    return found


def decisions_in(reply: str) -> list[Capture]:
    """The decisions an agent states in its own reply ("we decided ...", "let's go with
    ..."): the agent itself decides they are the team's (ARCHITECTURE, "Memory is no
    back door")."""
    return captures(reply, AGENT_KINDS)


def normalised(text: str) -> str:
    """Words only, lower case: what deduplication compares."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _value(kind: str, sentence: str, pattern: re.Pattern[str]) -> str | None:
    """What the sentence names (None: not a capture after all)."""
    if kind not in ("place", "name", "fact"):
        return ""
    # again on the sentence as written (case kept), ignoring case this time
    hit = re.compile(pattern.pattern, re.IGNORECASE).match(sentence)
    if hit is None:
        return None
    if kind == "place":
        return zone_for_place(hit.group("value"))
    if kind == "fact":
        return normalised(hit.group("value"))
    name = hit.group("value").strip().rstrip(".!")
    return name if 0 < len(name) <= 60 else None
