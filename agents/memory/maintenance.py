"""Periodic maintenance: distil daily logs into MEMORY.md (reference 000, section 7.2).

`distil` is a plain coroutine so a scheduler job (the triggers engine) can run it
for an agent, e.g. nightly. It reads the daily logs of the days before today that
were not distilled yet (oldest first, within a size budget), asks the model to merge
them into the current MEMORY.md, and rewrites MEMORY.md atomically. The logs
themselves stay as they are (append-only). The last distilled day is kept in
`memory/.distilled`, so a run that fails changes nothing and the next one retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.llm import CallLabel
from agents.memory.agent import AgentMemory
from agents.memory.files import MEMORY_FILE

if TYPE_CHECKING:
    from agents.llm import Provider

STATE_FILE = "memory/.distilled"
INPUT_CHARS = 60_000
DISTIL = (
    "You maintain an assistant's long-term memory file, MEMORY.md (markdown, sectioned "
    "with ## headings). Merge the new daily-log entries into it: keep what still holds, add "
    "lasting facts, decisions, preferences and lessons, update what changed, drop what is "
    "outdated or trivial. Answer with the complete new MEMORY.md and nothing else."
)


async def distil(memory: AgentMemory, llm: Provider) -> str:
    """Merge the undistilled daily logs (before today) into MEMORY.md; says what it did."""
    files = memory.files
    done = files.read(STATE_FILE).strip()
    today = files.day_path(files.now().date())
    pending = [name for name in files.daily_logs() if name < today and _day(name) > done]
    batch: list[tuple[str, str]] = []
    size = 0
    for name in pending:
        text = files.read(name)
        size += len(text)
        if batch and size > INPUT_CHARS:
            break
        batch.append((name, text))
    if not batch:
        return "Nothing to distil."
    logs = "\n\n".join(f"## Log {_day(n)}\n{t}" for n, t in batch)
    current = files.read(MEMORY_FILE) or "(empty)"
    prompt = f"<memory_md>\n{current}\n</memory_md>\n\n<daily_logs>\n{logs}\n</daily_logs>"
    label = CallLabel(memory.agent_id, "memory")
    response = await llm.complete(DISTIL, [], [{"role": "user", "content": prompt}], label)
    if not response.text.strip():
        return "The model returned nothing; MEMORY.md unchanged."
    memory.reflect(response.text)
    files.write(STATE_FILE, _day(batch[-1][0]) + "\n")
    left = len(pending) - len(batch)
    return f"Distilled {len(batch)} daily log(s) into MEMORY.md" + (
        f"; {left} left for the next run." if left else "."
    )


def _day(name: str) -> str:
    return name.rsplit("/", 1)[-1].removesuffix(".md")
