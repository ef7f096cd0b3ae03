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

import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from agents.loop.marking import untrusted
from agents.memory.shared import DECISIONS_DIR, TEAM_KNOWLEDGE, Shared

NEWS_DAYS = 2
NEWS_ITEMS = 12
NEWS_CHARS = 8_000
TOPIC_CHARS = 1_500  # a long topic shows its beginning; memory_search reads the rest
_ENTRY = re.compile(r"^- (\d\d:\d\d) (.+)$")


def team_news(shared: Shared, shown: str) -> list[str]:
    """The news blocks `shown` (the conversation's text so far) does not hold yet."""
    found = [*_decisions(shared), *_topics(shared)]  # each in the order written
    order = sorted(range(len(found)), key=lambda at: (found[at][0], at))  # by time, stably
    newest = [found[at][1]() for at in order[-NEWS_ITEMS:]]  # older news: memory_search
    blocks = [block for block in newest if block and block not in shown]
    kept: list[str] = []
    size = 0
    for block in reversed(blocks):  # the newest first within the budget
        size += len(block)
        if size > NEWS_CHARS:
            break
        kept.append(block)
    return kept[::-1]


Item = tuple[str, Callable[[], str]]  # (when, its block: built only for the newest)


def _decisions(shared: Shared) -> list[Item]:
    today = shared.files.now().date()
    found: list[Item] = []
    for back in range(NEWS_DAYS - 1, -1, -1):
        day = (today - timedelta(days=back)).isoformat()
        relative = f"{DECISIONS_DIR}/{day}.md"
        for line in shared.files.read(relative).splitlines():
            entry = _ENTRY.match(line.strip())
            if entry is not None:
                when, said = f"{day} {entry.group(1)}", entry.group(2)
                source = f"team decision, {when} ({relative})"
                found.append((when, partial(untrusted, said, source)))
    return found


def _topics(shared: Shared) -> list[Item]:
    """Topics written lately, by one directory scan (a turn pays for it on the loop)."""
    since = (time.time() - NEWS_DAYS * 86_400) * 1e9
    found: list[Item] = []
    try:
        entries = list(os.scandir(shared.files.root / TEAM_KNOWLEDGE))
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.endswith(".md") or not entry.is_file(follow_symlinks=False):
            continue
        mtime = entry.stat().st_mtime_ns
        if mtime < since:
            continue
        when = f"{datetime.fromtimestamp(mtime / 1e9, shared.files.zone):%Y-%m-%d %H:%M}"
        relative = f"{TEAM_KNOWLEDGE}/{entry.name}"
        found.append((f"{when} {mtime}", partial(_topic, shared, relative, when)))
    return found


def _topic(shared: Shared, relative: str, when: str) -> str:
    text = shared.files.read(relative).strip()
    if not text:
        return ""
    if len(text) > TOPIC_CHARS:
        text = text[:TOPIC_CHARS] + "\n(… memory_search reads the rest)"
    return untrusted(text, f"team knowledge, changed {when} ({relative})")
