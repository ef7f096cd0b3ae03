"""A stored conversation as people see it, not as the model reads it.

The model's transcript carries the runtime's plumbing (agents/loop/transcript.py,
agents/loop/marking.py): `[Now: ...]` lines, `<untrusted source=... speaker=...>`
blocks around what people said, speaker lines `[Ann via slack]: `, notices and runtime
notes (`[Switchboard notice]: `, `[Switchboard: ...]`, `[Context for this turn]`).
Here a person's words become `Ann (slack): text`, a worker's relayed words a line under
its label, and everything the runtime added a note a page may fold away. Thinking is
never part of it. What people wrote is kept as written (a backslash the marking put
before a bracket, or `&lt;` before one of our tags, is taken back).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["said", "note"]

_BLOCK = re.compile(
    r'<untrusted source="(?P<source>[^"]*)"(?: speaker="(?P<speaker>[^"]*)")?>\n'
    r"(?P<body>.*?)\n</untrusted>",
    re.S,
)
_SPEAKER = re.compile(r"\[(?P<who>[^\]\n]+?)(?: via (?P<via>[^\]\n]+))?\]: ")
_ANSWERED = re.compile(r"(?P<who>[^\n]+?) answered: ")
_LABEL = re.compile(r"\[(?P<label>[^\]\n]+)\]: ")
RELAYED = ("result", "suggestion")  # a worker's words in its coordinator's conversation
_RESULT = re.compile(r"\[Worker (?P<who>[^\]\n]+?) (?P<what>published its result|suggests a "
                     r"next step)\]: ")  # fmt: skip
_NOW = re.compile(r"^\[Now: [^\n]*\]\s*$", re.M)
_UNMARK = re.compile(r"(?m)^(\s*)\\(?=[\[\uff3b])")
_TAGS = re.compile(r"&lt;(?=/?(?:untrusted|memory|profile)\b)", re.I)
#: runtime text that opens a user turn's text block (a notice, a note, a context block)
_RUNTIME_OPEN = ("[Switchboard", "[Scheduled task]", "[Context for this turn]", "[Message from ",
                 "[Worker ", "[Subject: ")  # fmt: skip


@dataclass(slots=True)
class Piece:
    """One thing said (`said`: by `who`, through `via`) or noted by the runtime."""

    kind: Kind
    who: str
    text: str
    via: str = ""

    @property
    def line(self) -> str:
        """`Ann (slack): text`, or the note as it reads."""
        if self.kind == "note" or not self.who:
            return self.text
        return f"{self.who} ({self.via}): {self.text}" if self.via else f"{self.who}: {self.text}"


def unmark(text: str) -> str:
    """Take back the marking's escapes: what the person typed, as typed."""
    return _TAGS.sub("<", _UNMARK.sub(r"\1", text))


def pieces(text: str) -> list[Piece]:
    """A user turn's text (or a tool result) as what was said and what was noted."""
    out: list[Piece] = []
    pos = 0
    for match in _BLOCK.finditer(text):
        out.extend(_plain(text[pos : match.start()]))
        out.append(_block(match))
        pos = match.end()
    out.extend(_plain(text[pos:]))
    return out


def _block(match: re.Match[str]) -> Piece:
    body, source, speaker = match["body"], match["source"], match["speaker"]
    said = _SPEAKER.match(body)
    if speaker and said:
        via = said["via"] or ""
        return Piece("said", said["who"], unmark(body[said.end() :]).strip(), via)
    answered = _ANSWERED.match(body)
    if speaker and answered:
        return Piece("said", answered["who"], "answered: " + unmark(body[answered.end() :]))
    label = _LABEL.match(body)
    result = _RESULT.match(body)
    if result:  # a worker's words, relayed: said by the worker
        what = "result" if result["what"].startswith("published") else "suggestion"
        return Piece("said", result["who"], unmark(body[result.end() :]).strip(), what)
    if label:
        return Piece("note", "", f"{label['label']}: {unmark(body[label.end() :]).strip()}")
    return Piece("note", "", f"{source}: {unmark(body).strip()}")


def _plain(text: str) -> list[Piece]:
    """Text outside any block: the runtime's own (a clock line is dropped)."""
    text = _NOW.sub("", text).strip()
    if not text:
        return []
    if text.startswith(_RUNTIME_OPEN) or text.startswith("["):
        return [Piece("note", "", _strip_label(text))]
    return [Piece("said", "", text)]


def _strip_label(text: str) -> str:
    """`[Switchboard notice]: x` reads `Switchboard notice: x`; `[Switchboard: x]` `x`."""
    if text.startswith("[Switchboard: ") and text.endswith("]"):
        return text[len("[Switchboard: ") : -1]
    label = _LABEL.match(text)
    return f"{label['label']}: {text[label.end() :]}" if label else text


def message_pieces(message: dict[str, Any]) -> list[tuple[str, Piece]]:
    """(block kind, piece) of a stored message: `text`, `tool_use`, `tool_result`.
    Thinking blocks give nothing."""
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    out: list[tuple[str, Piece]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            if message.get("role") == "assistant":
                out.append(("text", Piece("said", "", text.strip())))
            else:
                out.extend(("text", p) for p in pieces(text))
        elif kind == "tool_use":
            name, args = str(block.get("name", "?")), arguments(block.get("input", {}))
            out.append(("tool_use", Piece("note", name, args)))
        elif kind == "tool_result":
            out.append(("tool_result", Piece("note", "", _result_text(block))))
        elif kind in ("image", "document"):
            out.append(("text", Piece("note", "", f"(an attached {kind})")))
    return out


def arguments(args: object) -> str:
    """A tool call's arguments as `key: value` lines, not JSON."""
    if not isinstance(args, dict):
        return json.dumps(args, ensure_ascii=False, default=str)
    return "\n".join(f"{k}: {_value(v)}" for k, v in args.items())


def _value(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        texts = [c for c in content if isinstance(c, dict) and c.get("type") == "text"]
        content = "\n".join(str(c.get("text", "")) for c in texts)
    text = "\n".join(p.line for p in pieces(str(content or "")))
    return ("(error) " if block.get("is_error") else "") + text


def people_and_first_line(messages: list[dict[str, Any]]) -> tuple[list[str], str]:
    """Who spoke in a conversation (in order of first word) and the first thing said."""
    people: list[str] = []
    first = ""
    for message in messages:
        if message.get("role") != "user":
            continue
        for kind, piece in message_pieces(message):
            if kind != "text" or piece.kind != "said" or not piece.who or piece.via in RELAYED:
                continue
            if piece.who not in people:
                people.append(piece.who)
            if not first and piece.text.strip():
                first = piece.text.strip().splitlines()[0]
    return people, first or _first_note(messages)


def _first_note(messages: list[dict[str, Any]]) -> str:
    """A conversation no person spoke in (a worker's task): its first line of text."""
    for message in messages[:2]:
        for kind, piece in message_pieces(message):
            text = piece.text.split(": ", 1)[-1].strip() if piece.kind == "note" else piece.text
            if kind == "text" and text:
                return text.splitlines()[0]
    return ""


def subject_of(messages: list[dict[str, Any]]) -> str:
    """An email conversation's subject, as its first mail gave it (`[Subject: ...]`)."""
    for message in messages[:6]:
        content = message.get("content")
        blob = content if isinstance(content, str) else str(content)
        found = re.search(r"\[Subject: ([^\]\n]+)\]", blob)
        if found:
            return found.group(1)
    return ""
