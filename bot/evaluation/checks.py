"""The checks a task is scored by: facts about what the bot posted in the local Slack
and which tools the runtime ran (its `tool.called` events), never a model's opinion.

Each check has a `label` (what it demands, printed when it fails) and a test of the
`World`. Texts are compared case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.evaluation.world import World

RAN = ("ok", "parked")  # outcomes of a call that ran (`ask_human` parks its worker)


@dataclass(frozen=True)
class Check:
    label: str
    test: Callable[[World], bool]


def _texts(posts: list[dict[str, Any]]) -> list[str]:
    return [str(p.get("text", "")).lower() for p in posts]


def replied(*words: str, thread: str = "") -> Check:
    """Some answer in the thread (the current one, or the one named) holds every word."""
    where = f" in thread {thread}" if thread else ""
    return Check(
        f"an answer{where} says {' and '.join(words)}",
        lambda w: any(all(x.lower() in t for x in words) for t in _texts(w.replies(thread))),
    )


def replied_any(*words: str) -> Check:
    """Some answer in the current thread holds one of the words."""
    return Check(
        f"an answer says one of {', '.join(words)}",
        lambda w: any(x.lower() in t for t in _texts(w.replies()) for x in words),
    )


def never_posted(words: str) -> Check:
    """No post of the bot, anywhere, holds `words`."""
    lower = words.lower()
    return Check(
        f"nothing posted says {words!r}", lambda w: all(lower not in t for t in _texts(w.posts))
    )


def answers(count: int, exactly: bool = False) -> Check:
    """At least (or `exactly`) `count` answers in the current thread."""
    if exactly:
        return Check(f"{count} answer(s) in the thread", lambda w: len(w.replies()) == count)
    return Check(f"at least {count} answers in the thread", lambda w: len(w.replies()) >= count)


def called(tool: str, by: str | None = None, times: int | None = None) -> Check:
    """`tool` ran without error (by agent `by`; exactly `times` times when given): a
    call held for approval counts once it has run."""
    who = f" by {by}" if by else ""

    def test(w: World) -> bool:
        ok = [c for c in w.tools(by) if c["tool"] == tool and c.get("outcome") in RAN]
        return len(ok) == times if times is not None else bool(ok)

    count = f" {times} time(s)" if times is not None else ""
    return Check(f"{tool} ran{who}{count}", test)


def not_called(*tools: str) -> Check:
    return Check(
        f"none of {', '.join(tools)} was called",
        lambda w: not any(c["tool"] in tools for c in w.tools()),
    )


def said_by(agent: str) -> Check:
    """A post in the current thread after the mark `mention` speaks as `agent`."""
    return Check(
        f"{agent} answered in the thread",
        lambda w: any(
            str(p.get("username", "")).lower() == agent.lower()
            for p in w.since("mention")
            if p.get("thread_ts") == w.thread
        ),
    )


def posts_since(mark: str, channel: str, count: int, *words: str) -> Check:
    """Exactly `count` posts in `channel` after `mark` (each holding `words`)."""
    extra = f" saying {' and '.join(words)}" if words else ""

    def test(w: World) -> bool:
        texts = _texts(w.since(mark, channel))
        return len(texts) == count and all(x.lower() in t for t in texts for x in words)

    return Check(f"{count} post(s) in {channel} after {mark}{extra}", test)


def within(budget: int) -> Check:
    """The thread was compacted, and each compaction left it under `budget` tokens (the
    runtime's own estimate, as it decides when to compact)."""
    return Check(
        f"the thread was compacted to under {budget} tokens",
        lambda w: (
            bool(done := w.of_type("memory.compacted"))
            and all(e.data["tokens_after"] < budget for e in done)
        ),
    )


def no_event(kind: str, label: str) -> Check:
    return Check(label, lambda w: not w.of_type(kind))


def server_ran(tool: str, times: int, calls: str = "calls.jsonl") -> Check:
    """The task's MCP server ran `tool` exactly `times` times (its own record)."""

    def test(w: World) -> bool:
        path = Path(w.app.settings.data_dir) / calls
        lines = path.read_text().splitlines() if path.exists() else []
        return sum(f'"tool": "{tool}"' in line for line in lines) == times

    return Check(f"the server ran {tool} {times} time(s)", test)


#: the commonest short words of each language: a reply in the language uses several
WORDS = {
    "en": "the a an is are of and to it has have there this that with for".split(),
    "es": "el la los las un una es son de y en tiene hay que con por para del se".split(),
    "de": "der die das ein eine ist sind und zu hat mit für nicht von auf".split(),
}


def in_language(lang: str) -> Check:
    """Every answer in the thread is in `lang`: more of its common words than of any
    other language's, and at least two of them."""

    def counts(text: str) -> dict[str, int]:
        words = re.findall(r"[^\W\d_]+", text.lower())
        return {k: sum(x in set(v) for x in words) for k, v in WORDS.items()}

    def test(w: World) -> bool:
        replies = _texts(w.replies())
        scored = [counts(t) for t in replies]
        return bool(replies) and all(
            c[lang] >= 2 and all(c[lang] > n for k, n in c.items() if k != lang) for c in scored
        )

    return Check(f"every answer is in {lang}", test)
