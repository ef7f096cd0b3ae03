"""The memory tools as the model sees them: `recall(days?)`, `remember(content)`,
`reflect(content)`, `learn_fact(topic, content, shared?)`, `memory_search(query)`,
`note_about_person(person, content)`, and the corrections `update_note(old, new,
person? | topic?)` and `forget(old, person? | topic?)` (agents/memory/corrections.py).

Each agent gets tools bound to its own `AgentMemory`, so nothing the model passes can
name another agent's files. File work runs in a thread (appends are fsynced), so a
slow disk never stalls other conversations. A refusal from the files layer becomes
an error text for the model (`ToolError`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.loop.marking import untrusted
from agents.memory.files import MemoryRefused
from agents.tools.toolbox import INT, STR, Tool, ToolError, ToolSpec, arg, schema

if TYPE_CHECKING:
    from agents.memory.agent import AgentMemory

MAX_RECALL_DAYS = 30

RECALL = ToolSpec(
    "recall",
    "Read all your memory: MEMORY.md, knowledge topics (yours, the team's), recent daily "
    "logs. Your prompt already holds MEMORY.md and two days of log; to find one thing, "
    "use memory_search.",
    schema(
        {},
        {
            "days": arg(
                INT,
                "how many days of daily logs (default 3)",
                minimum=1,
                maximum=MAX_RECALL_DAYS,
            )
        },
    ),
)
REMEMBER = ToolSpec(
    "remember",
    "Append to today's log (yours, kept): what was said or done that is worth keeping. "
    'What people say outright ("remember ...", "I prefer ...", "we decided ...") is '
    "captured by itself. Preferences go to note_about_person, a topic's facts to "
    "learn_fact, lessons to reflect.",
    schema({"content": arg(STR, "the note", minLength=1)}),
)
REFLECT = ToolSpec(
    "reflect",
    "Replace MEMORY.md, your curated memory in every prompt of yours: lessons on how to "
    "work, standing context. Send the whole file, keeping what still holds.",
    schema({"content": arg(STR, "the whole new file", minLength=1)}),
)
LEARN_FACT = ToolSpec(
    "learn_fact",
    "Replace a topic's knowledge file with its whole new text: what is true about a system, "
    "process or subject. To change one line of a team fact: update_note.",
    schema(
        {
            "topic": arg(STR, "lower-case, digits, dashes: python-asyncio", minLength=1),
            "content": arg(STR, "the whole file", minLength=1),
        },
        {
            "shared": arg(
                {"type": "boolean"},
                "true: every agent's at once (findings, decisions); default: yours",
            )
        },
    ),
)
MEMORY_SEARCH = ToolSpec(
    "memory_search",
    "Search all memory: yours, team knowledge and decisions, people's profiles, archived "
    "conversations; returns the best sections and their files. Try it before asking a person.",
    schema({"query": arg(STR, "words to find", minLength=1)}),
)
NOTE_ABOUT_PERSON = ToolSpec(
    "note_about_person",
    "Append a note to a person's profile, which every agent sees when they talk: role, "
    "preferences, how they like answers. What they say outright about themselves is "
    "captured by itself.",
    schema(
        {
            "person": arg(STR, "their name, or platform id if unlisted", minLength=1),
            "content": arg(STR, "the note", minLength=1),
        }
    ),
)
_OLD = {**STR, "minLength": 1, "description": "Words of that one line."}
_PERSON = {**STR, "description": "Whose profile: a name or platform id."}
_TOPIC = {**STR, "description": "Or which team fact, e.g. deploy-process."}
UPDATE_NOTE = ToolSpec(
    "update_note",
    "Replace one line of a person's profile or of a team fact: the line saying `old` "
    "becomes `new`. Give person or topic.",
    schema(
        {"old": _OLD, "new": {**STR, "minLength": 1, "description": "The corrected line."}},
        {"person": _PERSON, "topic": _TOPIC},
    ),
)
FORGET = ToolSpec(
    "forget",
    "Delete the line saying `old` from a person's profile or a team fact: wrong, outdated, "
    "or asked to be dropped. Give person or topic.",
    schema({"old": _OLD}, {"person": _PERSON, "topic": _TOPIC}),
)
SPECS = {
    s.name: s
    for s in (
        RECALL,
        REMEMBER,
        REFLECT,
        LEARN_FACT,
        MEMORY_SEARCH,
        NOTE_ABOUT_PERSON,
        UPDATE_NOTE,
        FORGET,
    )
}
NAMES = frozenset(SPECS)


def memory_tools(
    memory_of: Callable[[], AgentMemory],
    written: Callable[[str], None],
    person_of: Callable[[str], str | None] = lambda name: None,
    source: str = "",
    archives: Callable[[str], bool] | None = None,
) -> list[Tool]:
    """The tools bound to one agent's memory, opened on first use (restoring a
    thousand parked workers must not open a thousand indexes); `written(tool)` is told
    after a write (on the event loop's thread, where events may be emitted);
    `person_of(name)` is the listed person a name or id stands for; `source` labels
    what `remember` and `note_about_person` write (the conversation it was decided in);
    `archives(path)` which archived conversations `memory_search` shows."""
    calls = MemoryCalls(memory_of, written, person_of, source, archives)
    return [Tool(SPECS[name], _Call(calls, name)) for name in ACTIONS]


@dataclass(slots=True)
class MemoryCalls:
    """What one toolbox's memory tools share: one small object per session, the specs
    and what each tool does shared by all (not a closure per tool per session)."""

    memory_of: Callable[[], AgentMemory]
    written: Callable[[str], None]
    person_of: Callable[[str], str | None]
    source: str
    archives: Callable[[str], bool] | None

    async def run(self, name: str, args: dict[str, Any]) -> str:
        action, writes = ACTIONS[name]
        try:
            text = await asyncio.to_thread(action, self, args)
        except MemoryRefused as exc:
            raise ToolError(str(exc)) from exc
        if writes:
            self.written(name)
            return text
        return untrusted(text, f"memory ({name}): notes, logs and what people said")


class _Call:
    """One memory tool's handler: its name and the session's `MemoryCalls` (48 bytes)."""

    __slots__ = ("calls", "name")

    def __init__(self, calls: MemoryCalls, name: str) -> None:
        self.calls = calls
        self.name = name

    def __call__(self, args: dict[str, Any]) -> Awaitable[str]:
        return self.calls.run(self.name, args)


Action = Callable[[MemoryCalls, dict[str, Any]], str]
#: each tool's work on the agent's memory (run in a thread), and whether it writes
ACTIONS: dict[str, tuple[Action, bool]] = {
    "recall": (lambda c, a: c.memory_of().recall(a.get("days", 3)), False),
    "remember": (lambda c, a: c.memory_of().remember(a["content"], c.source), True),
    "reflect": (lambda c, a: c.memory_of().reflect(a["content"]), True),
    "learn_fact": (
        lambda c, a: c.memory_of().learn_fact(
            a["topic"], a["content"], bool(a.get("shared")), c.source
        ),
        True,
    ),
    "memory_search": (lambda c, a: c.memory_of().search(a["query"], c.archives), False),
    "note_about_person": (
        lambda c, a: c.memory_of().note_about(a["person"], a["content"], c.person_of, c.source),
        True,
    ),
    "update_note": (lambda c, a: _correct(c.memory_of(), a, a["new"], c.person_of), True),
    "forget": (lambda c, a: _correct(c.memory_of(), a, None, c.person_of), True),
}


def _correct(
    memory: AgentMemory,
    args: dict[str, Any],
    new: str | None,
    person_of: Callable[[str], str | None],
) -> str:
    return memory.correct(args["old"], new, args.get("person"), args.get("topic"), person_of)
