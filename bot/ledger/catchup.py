"""`catchup`: what the agents said to one person while they were away (docs/conversations.md).

"Away" starts when the person last spoke to the bot, anywhere: every routed message of
theirs stamps `people:last:<platform id>` in the store (`People.spoke`), and a
person's mark is the newest stamp of any of their ids (a listed person's Slack, Discord
and email ids together). Asking for a catchup is no message: it never moves the mark.

Since that mark, newest first: what agents answered in the person's own conversations
(outbox rows delivered there), the results of workers those conversations started, and
every question still open in them (whenever it was asked: it still waits). At most
`LIMIT` items, then "and N more". Only the conversations the person spoke in are read,
exactly as `/switchboard status` does (bot/ledger/personal.py): nobody sees another's
private conversation. Read-only; no model call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from bot.core.messages import Outbound
from bot.core.readout import ago
from bot.store.core import Store
from bot.store.schema import WorkerRow, WorkerStatus

#: items shown; the rest are counted ("and N more")
LIMIT = 20
#: outbox rows read back from the newest (a bound on the work of one catchup)
SCAN = 5000
#: characters of one item's text
CLIP = 240
#: a worker's own conversation (agents/team/worker.py TASK_KEY)
TASK_KEY = "task"
FINISHED: tuple[WorkerStatus, ...] = ("done", "failed", "stopped")


@dataclass(frozen=True, slots=True)
class Item:
    """One thing said: `kind` is `answer`, `question` (still open) or `result`."""

    at: float
    kind: str
    speaker: str
    where: str
    subject: str
    text: str
    #: the conversation it belongs to ("" when not known)
    conversation: str = ""


@dataclass(slots=True)
class Catchup:
    since: float | None
    items: list[Item] = field(default_factory=list)
    more: int = 0


def catchup(
    store: Store,
    conversations: Collection[str],
    since: float | None,
    names: dict[str, str],
    limit: int = LIMIT,
) -> Catchup:
    """What was said in `conversations` since `since` (when the person last spoke;
    None: never); `names` shows a worker id as its name."""
    found = [
        *_answers(store, conversations, since or 0.0, names),
        *_results(store, conversations, since or 0.0),
        *_questions(store, conversations, names),
    ]
    found.sort(key=lambda i: i.at, reverse=True)
    return Catchup(since, found[:limit], max(0, len(found) - limit))


def _answers(
    store: Store, conversations: Collection[str], since: float, names: dict[str, str]
) -> list[Item]:
    return [
        Item(at, "answer", names.get(m.agent, m.agent), str(m.target),
             str(m.meta.get("subject") or ""), m.text, m.conversation or "")
        for at, m in store.outbox.sent_in(conversations, since, SCAN)
        if m.kind == "reply" and _theirs(m, conversations)
    ]  # fmt: skip


def _theirs(msg: Outbound, conversations: Collection[str]) -> bool:
    if msg.conversation is not None:
        return msg.conversation in conversations
    return str(msg.target) in conversations


def _results(store: Store, conversations: Collection[str], since: float) -> list[Item]:
    return [
        Item(w.updated_at, "result", w.name, w.origin_target or w.origin_conversation or "",
             "", _outcome(store, w), w.origin_conversation or "")
        for w in store.agents.workers(FINISHED)
        if w.origin_conversation in conversations and w.updated_at >= since
    ]  # fmt: skip


def _outcome(store: Store, worker: WorkerRow) -> str:
    """What a worker published (its last `publish` call), else its state and task."""
    messages, _ = store.agents.load_conversation(worker.id, TASK_KEY)
    for message in reversed(messages if worker.status == "done" else []):
        content = message.get("content")
        for block in reversed(content if isinstance(content, list) else []):
            if block.get("type") == "tool_use" and block.get("name") == "publish":
                return str((block.get("input") or {}).get("result") or "")
    return f"{worker.status}: {worker.task}" + (f" ({worker.error})" if worker.error else "")


def _questions(store: Store, conversations: Collection[str], names: dict[str, str]) -> list[Item]:
    own = {w.id for w in store.agents.workers() if w.origin_conversation in conversations}
    return [
        Item(q.asked_at, "question", names.get(q.worker, q.worker), q.target, "", q.question,
             q.conversation or "")
        for q in store.agents.open_questions()
        if q.conversation in conversations or q.worker in own
    ]  # fmt: skip


_VERB = {"answer": "said", "question": "asks (waiting for you)", "result": "finished"}


def catchup_text(
    found: Catchup,
    link: Callable[[str], str] = str,
    escape: Callable[[str], str] = str,
    now: float | None = None,
    room: int = 0,
) -> str:
    """Plain text, one item a line; `link` shows a target as the channel links it,
    `escape` shows what people and agents wrote as written (a channel's markup). With
    `room` (characters), the oldest items shown give way to "and N more" to fit."""
    if found.since is None:
        head = "You have not spoken to me yet, so this is everything in your conversations."
    else:
        head = f"Since you last spoke to me ({ago(found.since, now)}):"
    if not found.items:
        return f"{head} nothing new." if found.since is not None else "Nothing to catch up on."
    lines = [_line(i, link, escape, now) for i in found.items]
    more = found.more
    while True:
        text = "\n".join([head, *lines, *([f"and {more} more (older)."] if more else [])])
        if not room or len(text) <= room or len(lines) <= 1:
            return text[:room] if room else text
        lines.pop()
        more += 1


def _line(
    item: Item, link: Callable[[str], str], escape: Callable[[str], str], now: float | None
) -> str:
    where = link(item.where) + (f' "{escape(item.subject)}"' if item.subject else "")
    text = " ".join(item.text.split())
    text = escape(text if len(text) <= CLIP else text[: CLIP - 1] + "…")
    said = f"{escape(item.speaker)} {_VERB[item.kind]}"
    return f"- {ago(item.at, now)}, {said} in {where}: {text}"
