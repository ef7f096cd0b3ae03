"""Routing rules for a person's message (the external contract's "Routing").

1. `@Name ...` (after the bot's own mention, which the channel strips) goes to the
   worker Name, case-insensitive; `@coordinator` to the coordinator; `@all`, `@*`
   or a leading `*` to the coordinator and every worker of this conversation.
   `@Name` for no such worker is an error naming this conversation's workers; for a
   worker of another conversation (bot/inbox/places.py) it is refused: the person is
   told it is not their worker, and nothing reaches it.
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
from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.core.messages import COORDINATOR, Inbound
from bot.core.notices import HELP, no_such_worker, not_your_worker
from bot.inbox.places import Origin, asked_here, owns, reaches
from bot.store.core import QuestionRow

_ADDRESS = re.compile(r"^\s*@([\w.\-*]+)[\s,:]*(.*)$", re.DOTALL)
_STAR = re.compile(r"^\s*\*(?:\s+|$)(.*)$", re.DOTALL)
BROADCAST_NAMES = {"all", "*", "everyone"}
FRESH_WORDS = {"new", "/new"}
HELP_WORDS = {"/help", "/?"}


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
    #: `@Name` of another conversation's worker: refused (its id), nothing delivered
    refused: str | None = None
    #: `stop` alone (`@Alice stop`): its recipient's running turn (that worker) ends, and
    #: no agent reads the word; decided here only, carried on the bus message's meta
    stop: bool = False


class Directory:
    """What the router knows: the live workers and the open questions. Questions change
    only through `add_question`, `add_refs` and `pop_question`, which keep them indexed
    by worker and by place, so routing costs the same with 1,000 open as with none."""

    def __init__(self) -> None:
        self.workers: dict[str, str] = {}  # id (lower case) -> display name
        self.origins: dict[str, Origin] = {}  # id -> where its task was asked
        self.questions: dict[str, QuestionRow] = {}
        self._of_worker: dict[str, set[str]] = {}  # worker -> ids of its questions
        self._by_ref: dict[str, set[str]] = {}  # platform reference -> question ids
        #: conversation or reference -> ids of the questions asked or posted there
        self._by_place: dict[str, set[str]] = {}

    def names(self, ids: Iterable[str] | None = None) -> list[str]:
        chosen = self.workers if ids is None else {i: self.workers[i] for i in ids}
        return sorted(chosen.values(), key=str.lower)

    def reaches(self, msg: Inbound, worker: str, sender: str | None = None) -> bool:
        """Whether `msg` (from platform id `sender`) may reach `worker`: from its own
        conversation's places, or from the person who asked for its task."""
        asked = [p for q in self.of_worker(worker) for p in (q.conversation, *q.refs) if p]
        return reaches(msg, self.origins.get(worker), asked, sender)

    def mine(self, msg: Inbound, sender: str | None = None) -> list[str]:
        """The workers `msg` may reach (`@all`, the names it is told)."""
        return [w for w in self.workers if self.reaches(msg, w, sender)]

    def add_question(self, q: QuestionRow) -> None:
        self.questions[q.id] = q
        _index(self._of_worker, [q.worker], q.id)
        self._index_refs(q, q.refs, [q.conversation])

    def add_refs(self, question_id: str, refs: list[str]) -> None:
        """Where a question was posted (a platform id, a thread): its answers come there."""
        q = self.questions.get(question_id)
        if q is not None:
            new = [r for r in dict.fromkeys(refs) if r not in q.refs]
            q.refs = [*q.refs, *new]
            self._index_refs(q, new, [])

    def pop_question(self, question_id: str) -> QuestionRow | None:
        q = self.questions.pop(question_id, None)
        if q is not None:
            _unindex(self._of_worker, [q.worker], q.id)
            _unindex(self._by_ref, q.refs, q.id)
            _unindex(self._by_place, [q.conversation, *q.refs], q.id)
        return q

    def of_worker(self, worker: str) -> list[QuestionRow]:
        return [self.questions[i] for i in self._of_worker.get(worker, ())]

    def answered_by(self, msg: Inbound) -> QuestionRow | None:
        """The open question `msg` answers (`latest_waiting`'s rule, through the index)."""
        ids = set().union(*(self._by_ref.get(r, ()) for r in msg.thread_refs))
        pool = [self.questions[i] for i in ids or self._by_place.get(msg.conversation, set())]
        return max(pool, key=lambda q: q.asked_at) if pool else None

    def _index_refs(self, q: QuestionRow, refs: list[str], places: list[str | None]) -> None:
        _index(self._by_ref, refs, q.id)
        _index(self._by_place, [*places, *refs], q.id)


def _index(index: dict[str, set[str]], keys: Iterable[str | None], question_id: str) -> None:
    for key in keys:
        if key is not None:
            index.setdefault(key, set()).add(question_id)


def _unindex(index: dict[str, set[str]], keys: Iterable[str | None], question_id: str) -> None:
    for key in keys:
        ids = index.get(key) if key is not None else None
        if key is not None and ids is not None:
            ids.discard(question_id)
            if not ids:
                del index[key]


def route(msg: Inbound, directory: Directory, sender: str | None = None) -> Route:
    """Where `msg` goes; `sender` is its author's platform id (`slack:U1`), which reaches
    the workers whose task they asked for from anywhere. Whether it is a `stop` is decided
    here, once: for what reaches an agent, never for a broadcast (`@all stop` informs)."""
    decision = _where(msg, directory, sender)
    decision.stop = bool(decision.recipients) and not decision.broadcast and is_stop(decision.text)
    return decision


def _where(msg: Inbound, directory: Directory, sender: str | None) -> Route:
    text = msg.text.strip()
    if text.lower() in FRESH_WORDS:
        return Route([COORDINATOR], text, fresh=True)
    if text.lower() in HELP_WORDS:  # answered here: no model reads it
        return Route(error=HELP)
    star = _STAR.match(text)
    if star:
        everyone = [COORDINATOR, *directory.mine(msg, sender)]
        return Route(everyone, star.group(1).strip(), broadcast=True)
    addressed = _ADDRESS.match(text)
    if addressed:
        name, rest = addressed.group(1).lower(), addressed.group(2).strip()
        if name in BROADCAST_NAMES:
            return Route([COORDINATOR, *directory.mine(msg, sender)], rest, broadcast=True)
        if name == COORDINATOR:
            return Route([COORDINATOR], rest)
        if name in directory.workers and not directory.reaches(msg, name, sender):
            return Route(error=not_your_worker(directory.workers[name]), refused=name)
        if name in directory.workers:
            return Route([name], rest, _question_of(name, directory, msg, sender))
        mine = directory.names(directory.mine(msg, sender))
        return Route(error=no_such_worker(addressed.group(1), mine))
    question = directory.answered_by(msg)
    if question is not None:
        return Route([question.worker], text, question)
    return Route([COORDINATOR], text)


def _question_of(
    worker: str, directory: Directory, msg: Inbound, sender: str | None
) -> QuestionRow | None:
    """The worker's latest open question `msg` may answer: any, from the worker's own;
    from a place it asked in, only the questions asked there."""
    mine = directory.of_worker(worker)
    if not owns(msg, directory.origins.get(worker), sender):
        mine = [q for q in mine if asked_here(msg, [p for p in (q.conversation, *q.refs) if p])]
    return max(mine, key=lambda q: q.asked_at) if mine else None


STOP_WORDS = frozenset({"stop", "/stop"})


def is_stop(text: str) -> bool:
    """`stop` alone: end the running turn here (or `@Alice stop`: that worker). Only
    `route` asks; everything after it reads `Route.stop` (or the bus message's meta)."""
    return text.strip().rstrip(".!").lower() in STOP_WORDS
