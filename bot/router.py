"""Routing rules for a person's message (the external contract's "Routing").

1. `@Name ...` (after the bot's own mention, which the channel strips) goes to the
   worker Name, case-insensitive; `@coordinator` to the coordinator; `@all`, `@*`
   or a leading `*` to everyone. `@Name` for no such worker is an error naming the
   workers that exist.
2. Otherwise, a reply inside the thread of a worker's open question goes to that
   worker as the answer (an exact platform reference, such as an email's
   In-Reply-To, wins over a shared thread; among several, the latest question).
3. Everything else goes to the coordinator.

`new` or `/new` alone (any case) starts a fresh conversation in that place: it goes
to the coordinator marked `fresh`, before any other rule (a worker's open question
here stays open, and its answer still reaches it with `@Name`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from bot.messages import COORDINATOR, Inbound
from bot.notices import no_such_worker
from bot.store import QuestionRow


class Waiting(Protocol):
    @property
    def refs(self) -> Sequence[str]: ...


W = TypeVar("W", bound=Waiting)

_ADDRESS = re.compile(r"^\s*@([\w.\-*]+)[\s,:]*(.*)$", re.DOTALL)
_STAR = re.compile(r"^\s*\*(?:\s+|$)(.*)$", re.DOTALL)
BROADCAST_NAMES = {"all", "*", "everyone"}
FRESH_WORDS = {"new", "/new"}


@dataclass(slots=True)
class Route:
    recipients: list[str] = field(default_factory=list)
    text: str = ""
    question: QuestionRow | None = None
    error: str | None = None
    #: `@all` / `*`: informs every agent, never answers a worker's open question
    broadcast: bool = False
    #: `new` / `/new`: the coordinator archives this conversation and starts afresh
    fresh: bool = False


class Directory:
    """What the router knows: the live workers and the open questions."""

    def __init__(self) -> None:
        self.workers: dict[str, str] = {}  # id (lower case) -> display name
        self.questions: dict[str, QuestionRow] = {}

    def names(self) -> list[str]:
        return sorted(self.workers.values(), key=str.lower)


def route(msg: Inbound, directory: Directory) -> Route:
    text = msg.text.strip()
    if text.lower() in FRESH_WORDS:
        return Route([COORDINATOR], text, fresh=True)
    star = _STAR.match(text)
    if star:
        return Route([COORDINATOR, *directory.workers], star.group(1).strip(), broadcast=True)
    addressed = _ADDRESS.match(text)
    if addressed:
        name, rest = addressed.group(1).lower(), addressed.group(2).strip()
        if name in BROADCAST_NAMES:
            return Route([COORDINATOR, *directory.workers], rest, broadcast=True)
        if name == COORDINATOR:
            return Route([COORDINATOR], rest)
        if name in directory.workers:
            return Route([name], rest, _question_of(name, directory))
        return Route(error=no_such_worker(addressed.group(1), directory.names()))
    question = _question_for(msg, directory)
    if question is not None:
        return Route([question.worker], text, question)
    return Route([COORDINATOR], text)


def _question_of(worker: str, directory: Directory) -> QuestionRow | None:
    mine = [q for q in directory.questions.values() if q.worker == worker]
    return max(mine, key=lambda q: q.asked_at) if mine else None


def _question_for(msg: Inbound, directory: Directory) -> QuestionRow | None:
    return latest_waiting(
        msg, directory.questions.values(), lambda q: (q.conversation,), lambda q: q.asked_at
    )


def latest_waiting(
    msg: Inbound,
    waiting: Iterable[W],
    places: Callable[[W], Iterable[str | None]],
    since: Callable[[W], float],
) -> W | None:
    """What a reply answers (an open question, a pending approval): one its platform
    reference names exactly (an email's In-Reply-To/References) first, else one in the
    same thread; of several, the latest."""
    items = list(waiting)
    refs = set(msg.thread_refs)
    pool = [w for w in items if refs & set(w.refs)] or [
        w for w in items if msg.conversation in (*places(w), *w.refs)
    ]
    return max(pool, key=since) if pool else None


STOP_WORDS = frozenset({"stop", "/stop"})


def is_stop(text: str) -> bool:
    """`stop` alone: end the running turn here (or `@Alice stop`: that worker)."""
    return text.strip().rstrip(".!").lower() in STOP_WORDS
