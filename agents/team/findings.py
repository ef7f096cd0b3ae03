"""A worker's findings reach the team with its result (issue 34, item 1).

`publish(result, learned?)`: each item of `learned` is a fact the team should know. The
runtime writes it at once to team knowledge (`team/knowledge/<topic>.md`, topic
`findings` unless the worker names one; a newer note on the same subject replaces the
older one, agents/memory/notes.py) with where it came from: which worker, which task,
which conversation. The same list goes with the result to the coordinator, so the
coordinator reads it in its next turn and every other agent finds it with
`memory_search` and in its next turn's context block.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents.memory.files import MemoryRefused, topic_name
from agents.services import Services
from agents.tools.toolbox import ToolError
from agents.tools.worker import MAX_FACT_CHARS, MAX_FINDINGS
from bot.store.schema import WorkerRow

DEFAULT_TOPIC = "findings"


def checked(learned: Any) -> list[tuple[str, str]]:
    """(topic, fact) pairs, or a ToolError saying what is wrong (nothing is published)."""
    if learned is None:
        return []
    if not isinstance(learned, list) or len(learned) > MAX_FINDINGS:
        raise ToolError(f"`learned` must be a list of at most {MAX_FINDINGS} items")
    pairs: list[tuple[str, str]] = []
    for item in learned:
        fact = item.get("fact") if isinstance(item, dict) else None
        if not isinstance(fact, str) or not fact.strip() or len(fact) > MAX_FACT_CHARS:
            raise ToolError(
                f'each item of `learned` is {{"fact": "...", "topic"?: "..."}}, the fact a '
                f"sentence of at most {MAX_FACT_CHARS:,} characters"
            )
        try:
            topic = topic_name(str(item.get("topic") or DEFAULT_TOPIC))
        except MemoryRefused as exc:
            raise ToolError(f"`learned`: {exc}") from exc
        pairs.append((topic, " ".join(fact.split())))
    return pairs


async def share(services: Services, row: WorkerRow, learned: Any) -> str:
    """Write the findings to team knowledge; the text that goes after the result."""
    pairs = checked(learned)
    if not pairs:
        return ""
    where = f" in {row.origin_conversation}" if row.origin_conversation else ""
    source = f"learned by {row.name}, task {_short(row.task)!r}{where}"
    lines = [f"- {fact} ({topic})" for topic, fact in pairs]
    memory = services.memory
    if memory is not None:
        written = await asyncio.to_thread(memory.learned, row.id, pairs, source)
        services.events.emit("memory.shared", row.id, files=written, findings=len(pairs))
    return "\n\nLearned (now in team knowledge, for every agent):\n" + "\n".join(lines)


def _short(task: str, limit: int = 80) -> str:
    text = " ".join(task.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
