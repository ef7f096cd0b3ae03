"""The memory part of every system prompt (after SOUL.md, which `agents/loop/prompts.py`
seeds): MEMORY.md, the last two days of the daily log and memory/index.md, in that
order, within a token budget. A conversation keeps the prompt it was built with
(`agents/loop/prompts.py`); `turn_context` gives what its turns add: the speaking person's
profile (shared by every agent), the team's news and memory written since, as marked data.

A daily-log entry a model wrote in a conversation (`remember`, titled `· in <key>`) is
shown as an `<untrusted>` block naming that conversation, not as `<memory>`: what was
said there may have steered the model to write it, and it reaches every conversation.

The text depends only on those files and the date, never on the clock or the
conversation, so it is byte-identical between turns while memory is unchanged and
the prompt cache keeps hitting. Over budget, the daily logs lose their oldest
entries first; a file that alone is too large keeps its beginning. Either way a note
says what was left out and how to read it (recall, memory_search).
"""

from __future__ import annotations

import re
from pathlib import Path

from agents.loop.marking import neutralise, untrusted
from agents.memory.agent import AgentMemory
from agents.memory.files import INDEX_FILE, LOG_DIR, MEMORY_FILE
from agents.memory.news import team_news
from agents.memory.parts import split_sections
from bot.core.bounded import Bounded

CHARS_PER_TOKEN = 4  # the estimate used throughout (no tokenizer for Claude offline)

GUIDE = (
    "You keep a memory in markdown files that persist across conversations and restarts "
    "(the memory tools). What you remember so far:"
)


def memory_prompt(memory: AgentMemory, person: str | None, budget_tokens: int) -> str:
    """The memory part; with `person`, their profile too (the conversations' prompts
    leave it out: it travels in the turns, `turn_context`)."""
    budget = budget_tokens * CHARS_PER_TOKEN
    files = memory.files
    profile = memory.shared.profile_path(person) if person else ""
    fixed = [
        (MEMORY_FILE, files.read(MEMORY_FILE)),
        (profile, memory.shared.profile(person) if person else ""),
        (INDEX_FILE, files.read(INDEX_FILE)),
    ]
    notes: list[str] = []
    share = budget // 2 // len(fixed)  # each fixed file may take this much when crowded
    fixed_size = sum(len(text) for _, text in fixed)
    if fixed_size > budget // 2:
        fixed = [(name, _head(name, text, share, notes)) for name, text in fixed]
    logs = _log_entries(memory)
    room = budget - sum(len(text) for _, text in fixed)
    logs, dropped = _newest_within(logs, room)
    if dropped:
        notes.append(
            f"{dropped} older daily-log entries are left out to fit the prompt; "
            "recall or memory_search reads them."
        )
    return _render(fixed, logs, notes)


def _head(name: str, text: str, limit: int, notes: list[str]) -> str:
    if len(text) <= limit:
        return text
    notes.append(f"{name} is cut at {limit:,} characters here; recall reads all of it.")
    return text[:limit]


def _log_entries(memory: AgentMemory) -> list[tuple[str, str]]:
    """(file, entry) for the last two days, oldest first; an entry is a `###` section."""
    entries: list[tuple[str, str]] = []
    for name in memory.files.recent_days(2):
        for section in split_sections(memory.files.read(name)):
            if not section.startswith("# "):  # the day's title line
                entries.append((name, section.strip()))
    return entries


def _newest_within(entries: list[tuple[str, str]], room: int) -> tuple[list[tuple[str, str]], int]:
    kept: list[tuple[str, str]] = []
    size = 0
    for entry in reversed(entries):
        size += len(entry[1]) + 2
        if size > room:
            break
        kept.append(entry)
    kept.reverse()
    return kept, len(entries) - len(kept)


def _render(fixed: list[tuple[str, str]], logs: list[tuple[str, str]], notes: list[str]) -> str:
    memory_md, profile, index = fixed
    parts = [GUIDE]
    if memory_md[1].strip():
        parts.append(_tag(memory_md[0], memory_md[1]))
    if profile[1].strip():
        parts.append(_tag(profile[0], profile[1], "About the person you are talking to. "))
    days: dict[str, list[str]] = {}
    for name, entry in logs:
        days.setdefault(name, []).append(entry)
    for name, entries in days.items():  # then those written in each conversation apart
        by_place: dict[str | None, list[str]] = {}
        for entry in entries:
            by_place.setdefault(written_in(entry), []).append(entry)
        parts += [_entry(name, "\n\n".join(group)) for group in by_place.values()]
    if index[1].strip():
        parts.append(_tag(index[0], index[1]))
    if len(parts) == 1:
        parts.append("(nothing yet)")
    parts += [f"[Memory note: {note}]" for note in notes]
    return "\n\n".join(parts)


#: the title `remember` gives an entry decided in a conversation (`### 09:12:03 · in <key>`)
_WRITTEN_IN = re.compile(r"\A### [0-9:]+ · in (\S[^\n]*)")


def written_in(entry: str) -> str | None:
    """The conversation a model wrote this daily-log entry in, or None (not one)."""
    found = _WRITTEN_IN.match(entry.strip())
    return found.group(1).strip() if found else None


def _entry(name: str, entry: str, note: str = "") -> str:
    """A log entry a model wrote in a conversation: what was said there may have steered
    it, so it is marked data like what people say, naming where it was written."""
    where = written_in(entry)
    if where is None:
        return _tag(name, entry, note=note)
    about = f", {note}" if note else ""
    return untrusted(entry.strip(), f"memory written in {where} ({name}){about}")


def _tag(name: str, text: str, lead: str = "", note: str = "") -> str:
    about = f' note="{note}"' if note else ""
    return f'<memory file="{name}"{about}>\n{lead}{neutralise(text.strip())}\n</memory>'


SINCE = "written since this conversation began"


def turn_context(
    memory: AgentMemory, people: list[str], system: str | None, shown: str, budget_tokens: int
) -> list[str]:
    """Blocks for this turn that neither the conversation's system prompt nor its earlier
    turns (`shown`) hold: each person's profile, the team's news (decisions and knowledge
    of the last two days, agents/memory/news.py), then memory written since the prompt was
    built (none for a conversation that has no prompt yet: it is built with them)."""
    blocks = [b for b in (profile_block(memory, p) for p in people) if b and b not in shown]
    blocks += team_news(memory.shared, shown)
    if system is None:
        return blocks
    limit = budget_tokens * CHARS_PER_TOKEN
    for name, text in _pieces(memory):
        block = _entry(name, text[:limit], note=SINCE)
        if neutralise(text.strip()[:limit]) not in system and block not in shown:
            blocks.append(block)
    return blocks


def profile_block(memory: AgentMemory, person: str) -> str:
    """A person's profile as marked data, or "" when there is none yet."""
    text = memory.shared.profile(person).strip()
    if not text:
        return ""
    return untrusted(text, f"profile of {person} ({memory.shared.profile_path(person)})")


def _pieces(memory: AgentMemory) -> list[tuple[str, str]]:
    """Each unit of memory the prompt shows: MEMORY.md, every log entry, the index."""
    files = memory.files
    whole = [(MEMORY_FILE, files.read(MEMORY_FILE)), (INDEX_FILE, files.read(INDEX_FILE))]
    return [(n, t) for n, t in [whole[0], *_log_entries(memory), whole[1]] if t.strip()]


Stamp = tuple[tuple[int, int, int] | None, ...]


class PromptCache:
    """The memory prompt per (agent, person), rebuilt only when one of its inputs changed.

    Building it reads and parses several files; a turn that finds them unchanged (by
    size and modification time, and the log folder's own time for new daily logs) reuses
    the text, so a hand edit still shows at the next turn.
    """

    #: entries kept: one per (agent, person) lately prompted, the least recently used
    #: dropped beyond it (rebuilt from the files at its next use)
    MAX = 256

    def __init__(self, max_entries: int = MAX) -> None:
        #: (agent id, person) -> (the files read, their stamp, the text); bounded: `max_entries`
        self._entries: Bounded[tuple[str, str | None], tuple[list[Path], Stamp, str]] = Bounded(
            max_entries
        )

    def get(self, memory: AgentMemory, person: str | None, budget_tokens: int) -> str:
        key = (memory.agent_id, person)
        entry = self._entries.get(key)
        if entry is not None and _stamp(entry[0]) == entry[1]:
            self._entries.touch(key)
            return entry[2]
        root = memory.files.root
        names = [MEMORY_FILE, INDEX_FILE, LOG_DIR, *memory.files.recent_days(2)]
        paths = [root / name for name in names]
        if person:
            paths.append(memory.shared.files.root / memory.shared.profile_path(person))
        stamp = _stamp(paths)  # before reading: a change while reading shows next time
        text = memory_prompt(memory, person, budget_tokens)
        self._entries.put(key, (paths, stamp, text))
        return text


def _stamp(paths: list[Path]) -> Stamp:
    # the inode too: an atomic rewrite (temp file + rename) of the same size within one
    # clock tick keeps size and mtime, never the inode
    out: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(out)
