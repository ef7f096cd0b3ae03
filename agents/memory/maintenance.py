"""Periodic maintenance: distil daily logs into MEMORY.md (reference 000, section 7.2),
without ever destroying what a person wrote there.

`distil` is a plain coroutine so a scheduler job (the triggers engine) can run it
for an agent, nightly (`SWITCHBOARD_MEMORY_DISTIL_CRON`; `SWITCHBOARD_MEMORY_DISTIL=false`
turns it off). It reads the daily logs of the days before today that were not
distilled yet (oldest first, within a size budget) and asks the model for a new
version of the one section of MEMORY.md it owns, between the two `switchboard:distilled`
marker lines. Everything outside the markers is the person's (or the agent's own
`reflect`) and is kept byte for byte; the model reads it only as context.

If someone edited the owned section by hand since the last run (its hash differs from
the one recorded), that text is kept too: it moves above the markers, as the
person's own, and a fresh owned section is written below it. The logs stay as they
are (append-only). `memory/.distilled` records the last distilled day and the hash of
the section written, so a run that fails changes nothing and the next one retries.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from agents.memory.agent import AgentMemory
from agents.memory.files import MEMORY_FILE, _atomic_write

if TYPE_CHECKING:
    from agents.model.llm import Provider

STATE_FILE = "memory/.distilled"
INPUT_CHARS = 60_000
START = "<!-- switchboard:distilled: written by the nightly distillation; edit above it -->"
END = "<!-- /switchboard:distilled -->"
DISTIL = (
    "You maintain the distilled section of an assistant's long-term memory file, "
    "MEMORY.md (markdown, sectioned with ## headings). Merge the new daily-log entries "
    "into the current distilled section: keep what still holds, add lasting facts, "
    "decisions, preferences and lessons, update what changed, drop what is outdated or "
    "trivial. The part written by people is shown for context only: do not repeat it. "
    "Answer with the complete new distilled section and nothing else."
)


def split(text: str) -> tuple[str, str, str]:
    """MEMORY.md as (the part above the owned section, the owned section, the rest)."""
    if START not in text or END not in text.split(START, 1)[1]:
        return text, "", ""
    before, rest = text.split(START, 1)
    owned, after = rest.split(END, 1)
    return before, owned.strip("\n"), after


def join(before: str, owned: str, after: str) -> str:
    head = before.rstrip("\n")
    section = f"{START}\n{owned.strip()}\n{END}"
    return (f"{head}\n\n{section}" if head else section) + (after if after.strip() else "\n")


def digest(text: str) -> str:
    return hashlib.sha1(text.strip().encode()).hexdigest()[:16]


async def distil(memory: AgentMemory, llm: Provider) -> str:
    """Merge the undistilled daily logs (before today) into MEMORY.md's own section."""
    files = memory.files
    done, written_hash = _state(files.read(STATE_FILE))
    today = files.day_path(files.now().date())
    pending = [name for name in files.daily_logs() if name < today and _day(name) > done]
    batch = _batch(memory, pending)
    if not batch:
        return "Nothing to distil."
    before, owned, _ = split(files.read(MEMORY_FILE))
    if owned and written_hash and digest(owned) != written_hash:
        before, owned = f"{before.rstrip()}\n\n{owned}".strip(), ""  # edited by hand: theirs
    logs = "\n\n".join(f"## Log {_day(n)}\n{t}" for n, t in batch)
    prompt = (
        f"<written_by_people>\n{before.strip() or '(nothing)'}\n</written_by_people>\n\n"
        f"<distilled_section>\n{owned or '(empty)'}\n</distilled_section>\n\n"
        f"<daily_logs>\n{logs}\n</daily_logs>"
    )
    response = await llm.complete(DISTIL, [], [{"role": "user", "content": prompt}], once=True)
    new = response.text.strip()
    if not new:
        return "The model returned nothing; MEMORY.md unchanged."
    _write(memory, owned, new)
    files.write(STATE_FILE, f"{_day(batch[-1][0])}\n{digest(new)}\n")
    left = len(pending) - len(batch)
    return f"Distilled {len(batch)} daily log(s) into MEMORY.md" + (
        f"; {left} left for the next run." if left else "."
    )


def _write(memory: AgentMemory, old_owned: str, new: str) -> None:
    """Replace the owned section in the file as it is now (a person may have edited
    it during the model call): everything else stays as found."""
    files = memory.files
    with files.locked(MEMORY_FILE) as path:
        current = path.read_text("utf-8", "replace") if path.exists() else ""
        before, owned, after = split(current)
        if owned and owned.strip() != old_owned.strip():
            before = f"{before.rstrip()}\n\n{owned}".strip()  # theirs now: kept
        content = join(before, new, after)
        files._check_size(MEMORY_FILE, len(content.encode()))
        _atomic_write(path, content)
    memory.index.touched(path)


def _batch(memory: AgentMemory, pending: list[str]) -> list[tuple[str, str]]:
    batch: list[tuple[str, str]] = []
    size = 0
    for name in pending:
        text = memory.files.read(name)
        size += len(text)
        if batch and size > INPUT_CHARS:
            break
        batch.append((name, text))
    return batch


def _state(text: str) -> tuple[str, str]:
    lines = [line.strip() for line in text.splitlines()] + ["", ""]
    return lines[0], lines[1]


def _day(name: str) -> str:
    return name.rsplit("/", 1)[-1].removesuffix(".md")
