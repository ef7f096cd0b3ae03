"""What a model had read when it wrote a call: untrusted content or not, and which web
addresses the people of its conversation gave it (docs/security.md, "What can leave").

Read from the stored conversation (and its system prompt), so it holds across restarts:

- **Untrusted content** is anything in the model's context that neither a person of
  this conversation wrote nor the runtime itself: a tool's or MCP server's result (but
  those of `OWN_RESULTS`, which only say what was stored, sent or started), a file or
  image, a page, mail or channel history a tool read, another agent's words (a worker's
  task, result or suggestion, a scheduled task, a compaction summary), and memory a
  model wrote in *another* conversation (a `remember` entry or a profile note).
- **Seen**: the hosts and URLs written in the people's own messages in the conversation
  (and the answers people gave to its questions). A URL's query and path count as
  supplied only when that exact URL was written; a host alone (`status.example.com`,
  or the host of any URL written) supplies its root page only.

Every text block of a user turn is the runtime's: a person's message in its marked
block, a clock line, a turn's context, a note; a block this module does not know
counts as untrusted (fail closed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

from agents.loop.marking import attr
from agents.model.blocks import Block, Messages, text_block

#: tools whose results are the runtime's own words: what was stored, sent or started
OWN_RESULTS = frozenset(
    {
        "send_message", "spawn_worker", "stop_worker", "schedule", "cancel_trigger",
        "remember", "reflect", "learn_fact", "note_about_person", "write_file",
        "publish", "suggest_next",
    }
)  # fmt: skip
#: a tool whose result is a person's answer (a seen source, like their messages)
ANSWERS = "ask_human"
#: a person's words as the runtime marks them (agents/loop/transcript.py)
_PERSON = re.compile(r'<untrusted source="[^"]* (?:message|answer)"(?: speaker="[^"]*")?>\n')
#: how the runtime's own lines start: the clock, notices, turn notes, a turn's context
_RUNTIME = ("[Now: ", "[Switchboard notice]", "[Switchboard: ", "[Switchboard] ",
            "[The earlier conversation was left out", "[Context for this turn]")  # fmt: skip
_URL = re.compile(r"https?://[^\s<>\"'`|\\^{}]+", re.IGNORECASE)
_HOST = re.compile(
    r"(?<![\w.@/-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})(?![\w-])",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?)]'\""
_MEMORY_FROM = re.compile(r'source="memory written in ([^"]*?) \(memory/')
_NOTED_IN = re.compile(r"\(noted in ([^()\n]*)\)")


@dataclass(slots=True)
class Read:
    """What the model had read: `why` names the first untrusted content (None: none)."""

    why: str | None = None
    hosts: set[str] = field(default_factory=set)
    urls: set[tuple[str, str, str]] = field(default_factory=set)

    def supplied(self, url: str) -> bool:
        """A person of the conversation gave this address: the exact URL, or a host's
        root page when they named the host."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return False
        port = _port(parts)
        netloc = (parts.hostname or "") + (f":{port}" if port else "")
        if (netloc, _path(parts), parts.query) in self.urls:
            return True
        bare = _path(parts) == "/" and not parts.query and not parts.username
        return bare and netloc in self.hosts


def read(messages: Messages, system: str | None, conversation: str | None) -> Read:
    """What `messages` (with the `system` prompt they were sent with) hold for a model
    serving `conversation`."""
    out = Read()
    names = _tool_names(messages)
    for role, block in _blocks(messages):
        if role != "user":
            continue
        why = _untrusted(block, names)
        if why is None:
            _note_seen(out, _person_texts(block, names))
        elif out.why is None:
            out.why = why
    if out.why is None:
        out.why = foreign_memory([system or "", *_texts(messages)], conversation)
    return out


def foreign_memory(texts: Iterable[str], conversation: str | None) -> str | None:
    """Memory a model wrote in another conversation, shown in these texts, or None."""
    here = attr(conversation or "")
    for text in texts:
        for found in _MEMORY_FROM.finditer(text):
            if found.group(1) != here:
                return f"memory a model wrote in {found.group(1)}"
        for found in _NOTED_IN.finditer(text):
            if found.group(1) not in (here, conversation):
                return f"a profile note a model wrote in {found.group(1)}"
    return None


def _untrusted(block: Block, names: dict[str, str]) -> str | None:
    """Why this user-turn block is untrusted content, or None. Read with `get`: a block
    that is not what the runtime writes (no type, no text) counts as untrusted."""
    kind = block.get("type")
    if kind == "tool_result":
        tool = names.get(str(block.get("tool_use_id")), "a tool")
        if tool in OWN_RESULTS or tool == ANSWERS:
            return None
        return f"the result of {tool}"
    if kind == "text":
        text = str(block.get("text", ""))
        if _PERSON.match(text) or text.startswith(_RUNTIME) or not text.strip():
            return None
        return f"text that is not a person's own ({text[:40]!r})"
    return f"a {kind} block (a file or image)"


def _person_texts(block: Block, names: dict[str, str]) -> list[str]:
    """A person's own words in a block `_untrusted` passed (a text or a tool result)."""
    if block["type"] == "text" and _PERSON.match(block.get("text", "")):
        return [block["text"]]
    if block["type"] == "tool_result" and names.get(str(block.get("tool_use_id"))) == ANSWERS:
        content = block.get("content")
        return [content] if isinstance(content, str) else []
    return []


def _note_seen(out: Read, texts: list[str]) -> None:
    for text in texts:
        for raw in _URL.findall(text):
            try:
                parts = urlsplit(raw.rstrip(_TRAILING))
            except ValueError:  # a bracket that opens no IPv6 address
                continue
            if not parts.hostname:
                continue
            netloc = parts.hostname + (f":{_port(parts)}" if _port(parts) else "")
            out.hosts.add(netloc)
            out.urls.add((netloc, _path(parts), parts.query))
        out.hosts.update(h.lower() for h in _HOST.findall(_URL.sub(" ", text)))


def _port(parts: SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:
        return None


def _path(parts: SplitResult) -> str:
    return parts.path or "/"


def _tool_names(messages: Messages) -> dict[str, str]:
    return {
        str(b.get("id")): str(b.get("name"))
        for role, b in _blocks(messages)
        if role == "assistant" and b.get("type") == "tool_use"
    }


def _texts(messages: Messages) -> list[str]:
    return [str(b.get("text", "")) for r, b in _blocks(messages) if b.get("type") == "text"]


def _blocks(messages: Messages) -> Iterator[tuple[str, Block]]:
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            yield message["role"], text_block(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    yield message["role"], block
