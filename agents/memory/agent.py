"""One agent's memory: what the tools do, the person profiles and auto-capture.

Layout below `<data_dir>/agents/<agent_id>/`: MEMORY.md (reflect), memory/YYYY-MM-DD.md
(remember, append-only), memory/knowledge/<topic>.md (learn_fact), memory/index.md
(what is stored where; regenerated when a topic is written), users/<person>.md (a
profile per person). Methods are synchronous (the tools run them in a thread) and
return the text the model reads.
"""

from __future__ import annotations

from agents.memory.capture import Capture, normalised
from agents.memory.files import (
    INDEX_FILE,
    KNOWLEDGE_DIR,
    MEMORY_FILE,
    USERS_DIR,
    AgentFiles,
    MemoryRefused,
    person_name,
    topic_name,
)
from agents.memory.search import MemoryIndex

RECALL_MAX_CHARS = 40_000
SEARCH_MAX_CHARS = 24_000
SEPARATOR = "\n\n---\n\n"


class AgentMemory:
    def __init__(self, agent_id: str, files: AgentFiles, index: MemoryIndex, inline_bytes: int):
        self.agent_id = agent_id
        self.files = files
        self.index = index
        self.inline_bytes = inline_bytes

    # -- the tools ---------------------------------------------------------------------
    def recall(self, days: int) -> str:
        parts = [(MEMORY_FILE, self.files.read(MEMORY_FILE))]
        parts += [(name, self.files.read(name)) for name in self.files.topics()]
        parts += [(name, self.files.read(name)) for name in reversed(self.files.recent_days(days))]
        blocks = [f"**{name}**\n{text.strip()}" for name, text in parts if text.strip()]
        if not blocks:
            return "Your memory is empty so far."
        return _fit(blocks, RECALL_MAX_CHARS, "use memory_search for the rest")

    def remember(self, content: str, label: str = "") -> str:
        relative = self.files.append_entry(content, label)
        self.index.touched(self.files.root / relative)
        return f"Noted in {relative}."

    def reflect(self, content: str) -> str:
        path = self.files.write(MEMORY_FILE, content.strip() + "\n")
        self.index.touched(path)
        return f"MEMORY.md rewritten ({len(content):,} characters)."

    def learn_fact(self, topic: str, content: str) -> str:
        relative = f"{KNOWLEDGE_DIR}/{topic_name(topic)}.md"
        path = self.files.write(relative, content.strip() + "\n")
        self.index.touched(path)
        self._write_index()
        return f"Stored in {relative}."

    def search(self, query: str) -> str:
        if not query.strip():
            raise MemoryRefused("the query is empty; give a few words to look for")
        self.index.refresh()
        if self.index.total_bytes() < self.inline_bytes:
            return self._everything()
        found = self.index.search(query)
        if not found.hits:
            return f"No memory matches {query!r}."
        blocks = [f"**{hit.path}**\n{hit.text.strip()}" for hit in found.hits]
        note = (
            "These words are in most of your memory, so these sections are not ranked; "
            "add a more specific word.\n\n"
            if found.broad
            else ""
        )
        return note + _fit(blocks, SEARCH_MAX_CHARS, "narrow the query")

    def _everything(self) -> str:
        paths = self.files.memory_files()
        blocks = [
            f"**{self.files.relative(p)}**\n{text.strip()}"
            for p in paths
            if (text := p.read_text(encoding="utf-8", errors="replace")).strip()
        ]
        if not blocks:
            return "Your memory is empty so far."
        return "Your whole memory (it is small):\n\n" + SEPARATOR.join(blocks)

    # -- profiles and capture ----------------------------------------------------------
    def profile_path(self, person: str | None) -> str | None:
        name = person_name(person) if person else None
        return f"{USERS_DIR}/{name}.md" if name else None

    def capture(self, items: list[Capture], person: str | None, display: str) -> list[str]:
        """Note what a person said outright (`captures` of their message); returns the
        files written, leaving out what every prompt already shows."""
        profile = self.profile_path(person)
        sources = [MEMORY_FILE, *self.files.recent_days(2), *([profile] if profile else [])]
        known = [normalised(self.files.read(name)) for name in sources]
        written: list[str] = []
        for item in items:
            needle = normalised(item.text)
            if any(needle in text for text in known):
                continue
            written.append(self._capture_one(item, profile, display))
            known.append(needle)
        return written

    def _capture_one(self, item: Capture, profile: str | None, display: str) -> str:
        if item.kind == "preference" and profile is not None:
            day = self.files.now().date().isoformat()
            head = f"# {display}\n\n## Preferences\n"
            self.index.touched(self.files.append(profile, f"- {item.text} ({day})\n", head))
            return profile
        relative = self.files.append_entry(item.text, f"{item.kind}, said by {display}")
        self.index.touched(self.files.root / relative)
        return relative

    def published(self, task: str, result: str) -> str:
        """A worker's reflection when it publishes: its task and result, in its log."""
        text = f"Task: {task.strip()[:2000]}\n\nResult: {result.strip()[:6000]}"
        return self.remember(text, "task published")

    # -- index.md ----------------------------------------------------------------------
    def _write_index(self) -> None:
        lines = [
            "# Memory index",
            "",
            "What is stored where (written by Switchboard when a topic changes).",
            "",
            "- MEMORY.md: curated long-term memory (reflect)",
            "- memory/YYYY-MM-DD.md: daily logs, append-only (remember)",
            "- users/<person>.md: what each person prefers",
            "",
            "## Knowledge topics",
        ]
        for name in self.files.topics():
            lines.append(f"- {name}: {_first_line(self.files.read(name))}")
        path = self.files.write(INDEX_FILE, "\n".join(lines) + "\n")
        self.index.touched(path)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()[:100]
    return "(empty)"


def _fit(blocks: list[str], limit: int, hint: str) -> str:
    """Join blocks within `limit` characters; the last blocks (the oldest logs, the
    weakest hits) are left out first, with a note saying so."""
    kept: list[str] = []
    size = 0
    for block in blocks:
        if size + len(block) > limit and kept:
            break
        kept.append(block[:limit])
        size += len(block) + len(SEPARATOR)
    text = SEPARATOR.join(kept)
    left = len(blocks) - len(kept)
    if left:
        text += f"\n\n({left} more part(s) left out to keep this short; {hint}.)"
    return text
