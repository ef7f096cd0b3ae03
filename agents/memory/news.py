"""Team news: what one conversation decided or learned reaches every other one at its
next turn (issue 34, item 1), through the turn's context block, never the system
prompt (the prompt cache holds: ARCHITECTURE "The prompt cache holds").

The news are the decisions log's entries of the last two days and the team-knowledge
topics written in that time (a worker's findings, `learn_fact(shared=true)`, captured
facts, consolidation), newest last, at most `NEWS_ITEMS` of them and `NEWS_CHARS`
characters. Each is an `<untrusted>` block naming its file and source: what a person
said in another conversation is data, never an order. A block the conversation holds
already is left out, so each item reaches a conversation once, and a topic revised
since reaches it again with its new text. Older news is found with `memory_search`.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from agents.loop.marking import untrusted
from agents.memory.shared import DECISIONS_DIR, Shared

NEWS_DAYS = 2
NEWS_ITEMS = 12
NEWS_CHARS = 8_000
TOPIC_CHARS = 1_500  # a long topic shows its beginning; memory_search reads the rest
_ENTRY = re.compile(r"^- (\d\d:\d\d) (.+)$")


def team_news(shared: Shared, shown: str) -> list[str]:
    """The news blocks `shown` (the conversation's text so far) does not hold yet."""
    found = [*_decisions(shared), *_topics(shared)]  # each in the order written
    order = sorted(range(len(found)), key=lambda at: (found[at][0], at))  # by time, stably
    newest = [found[at][1] for at in order][-NEWS_ITEMS:]  # older news: memory_search
    blocks = [block for block in newest if block not in shown]
    kept: list[str] = []
    size = 0
    for block in reversed(blocks):  # the newest first within the budget
        size += len(block)
        if size > NEWS_CHARS:
            break
        kept.append(block)
    return kept[::-1]


def _decisions(shared: Shared) -> list[tuple[str, str]]:
    today = shared.files.now().date()
    found: list[tuple[str, str]] = []
    for back in range(NEWS_DAYS - 1, -1, -1):
        day = (today - timedelta(days=back)).isoformat()
        relative = f"{DECISIONS_DIR}/{day}.md"
        for line in shared.files.read(relative).splitlines():
            entry = _ENTRY.match(line.strip())
            if entry is not None:
                source = f"team decision, {day} {entry.group(1)} ({relative})"
                found.append((f"{day} {entry.group(1)}", untrusted(entry.group(2), source)))
    return found


def _topics(shared: Shared) -> list[tuple[str, str]]:
    since = time.time() - NEWS_DAYS * 86_400
    found: list[tuple[str, str]] = []
    for relative in shared.topics():
        seen = shared.files.seen(shared.files.root / relative)
        if seen is None or seen.mtime_ns / 1e9 < since:
            continue
        text = shared.files.read(relative).strip()
        if not text:
            continue
        if len(text) > TOPIC_CHARS:
            text = text[:TOPIC_CHARS] + "\n(… memory_search reads the rest)"
        when = f"{datetime.fromtimestamp(seen.mtime_ns / 1e9, shared.files.zone):%Y-%m-%d %H:%M}"
        source = f"team knowledge, changed {when} ({relative})"
        found.append((when, untrusted(text, source)))
    return found
