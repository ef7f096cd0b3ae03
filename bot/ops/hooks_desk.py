"""Hands journaled hook deliveries to the agents, on the leader (docs/hooks.md).

Each delivery the journal holds open (status `hook`) becomes a `hook.<name>` event
(its filter fields and ids: what `on_event` triggers match and fire on) and a turn:
a task for the coordinator in the hook's own conversation, whose place is the hook's
`deliver_to`, or a worker started with the task (`agent = "worker"`). The `action` is
the operator's words; the payload travels beside it and reaches the model as
untrusted data (agents/loop/transcript.py), trimmed (bot/ops/hooks_view.py).

Handing over marks the journal row handled in the same transaction as the bus mail
(or the worker's row), so a delivery is handed over once, across crashes too; the
agent's turn and the post are then the bus's, the loop's and the outbox's to finish.

A group (an Alertmanager `groupKey`, a PagerDuty incident) has one thread: its first
turn posts in `deliver_to`, and once that post is delivered its thread is recorded
(`hooks.thread:<conversation>` in the store), so later notifications are answered
there. A notification that comes while the group's first post is still on its way, or
within `cooldown_seconds` of the group's last turn (or of its first post), waits; when
the wait ends the newest one is handed over, the ones it replaced counted in its note:
a storm is one turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bot.core.events import EVENT_KEY
from bot.core.messages import COORDINATOR, BusMessage, DeliveryReceipt, Inbound, Outbound
from bot.ledger.hooks_status import LAST_KEY
from bot.ops.desk import OpsView
from bot.ops.hooks import HookMetrics
from bot.ops.hooks_view import digest, rendered
from config.hooks import HookConfig

log = logging.getLogger(__name__)

SENDER = "hooks"
THREAD_KEY = "hooks.thread:"
#: how often the journal is read for deliveries this node was not offered: another
#: node's (PostgreSQL), or one whose hand-over failed; the read decodes every open row
POLL_SECONDS = 5.0
POLL_SECONDS_ALONE = 60.0
#: PostgreSQL: the least time between two reads of the journal a follower's
#: announcement asks for (a storm on a follower is not a read per delivery)
HEARD_GAP_SECONDS = 0.25
RECENT = 50
#: conversations whose first post is awaited (receipt-to-post time), at most
MAX_AWAITED = 10_000
#: alert groups held in memory before the idle ones leave (nothing held or awaited, the
#: cooldown over): one coming back starts as a new group does, in its thread (stored)
MAX_GROUPS = 1_000
#: event fields a payload may not set (they say whose and which event it is)
RESERVED = frozenset({"conversation", "trigger_id", "id", "kind", "place", "agent_id", EVENT_KEY})


@dataclass(slots=True)
class Group:
    """An alert group's (or incident's) state on this node."""

    last: float = 0.0
    awaiting_post: bool = False
    held: list[tuple[int, Inbound]] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class HookDesk:
    def __init__(self, view: OpsView, metrics: HookMetrics) -> None:
        self.settings = view.settings
        self.store = view.store
        self.events = view.events
        self.acts = view.acts
        self.metrics = metrics
        self.configs = {h.name: h for h in view.settings.hooks}
        #: alert group (conversation) -> its state here; bounded: past MAX_GROUPS the idle
        #: groups leave (an incident a month would otherwise stay for the process's life)
        self.groups: dict[str, Group] = {}
        #: the newest deliveries and what became of them, for the dashboard
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.last: dict[str, dict[str, Any]] = _load(view.store.get_kv(LAST_KEY))
        self._received: dict[str, tuple[str, float]] = {}  # conversation -> (hook, at)
        #: journal rows this node is handing over or holding (not read twice)
        self._seen: set[int] = set()
        self._queue: list[tuple[int, Inbound]] = []
        self._dirty = False
        self._heard = False
        self._wake = asyncio.Event()

    # -- taking ------------------------------------------------------------------------
    def offer(self, inbound_id: int, msg: Inbound) -> None:
        """A delivery this node just journaled: handed over at the desk's next turn,
        without reading the journal again."""
        if inbound_id not in self._seen:
            self._seen.add(inbound_id)
            self._queue.append((inbound_id, msg))
            self._wake.set()

    def heard(self) -> None:
        """A follower journaled a delivery (PostgreSQL, bot/leadership.py): read the
        journal soon, not at the next poll."""
        self._heard = True
        self._wake.set()

    async def run(self) -> None:
        """Hand over what is offered at once; read the journal at start (what a run
        before a crash left), every few seconds (what another node journaled, when its
        announcement was lost) and soon after a follower's announcement."""
        every = POLL_SECONDS if self.settings.database_url else POLL_SECONDS_ALONE
        scan, last_scan = True, 0.0
        while True:
            self._wake.clear()
            if scan:
                self._heard = False
            try:
                rows = self._announced(scan)
                # the triggers those events matched claim their firing (call_soon) before
                # the rows are closed: a crash in between re-announces them, and the
                # event's key makes the claim refuse a second firing
                await asyncio.sleep(0)
                self._handle(rows)
            except Exception:  # a bad row must not stop the desk: it is looked at again
                log.exception("handing hook deliveries over failed")
            last_scan = time.monotonic() if scan else last_scan
            due = last_scan + (HEARD_GAP_SECONDS if self._heard else every)
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.0, due - time.monotonic()))
            except TimeoutError:
                pass
            due = last_scan + (HEARD_GAP_SECONDS if self._heard else every)
            scan = time.monotonic() >= due

    def take(self, scan: bool = True) -> int:
        """Announce and hand over in one go (the loop's triggers fire after)."""
        rows = self._announced(scan)
        self._handle(rows)
        return len(rows)

    def _announced(self, scan: bool) -> list[tuple[int, Inbound]]:
        """The rows to hand over (offered, and the journal's open ones when scanning),
        each announced as its `hook.<name>` event."""
        rows, self._queue = self._queue, []
        if scan:
            found = self.store.inbound_by_status("hook")
            rows += [r for r in found if r[0] not in self._seen]
            self._seen.update(r[0] for r in rows)
        for _, msg in rows:
            hook = self.configs.get(str(msg.meta.get("hook")))
            if hook is not None:
                self._announce(hook, msg)
        return rows

    def _handle(self, rows: list[tuple[int, Inbound]]) -> None:
        for inbound_id, msg in rows:
            self._one(inbound_id, msg)
        if self._dirty:  # what `switchboard status` reads
            self._dirty = False
            self.store.set_kv(LAST_KEY, json.dumps(self.last))

    def _one(self, inbound_id: int, msg: Inbound) -> None:
        hook = self.configs.get(str(msg.meta.get("hook")))
        if hook is None:  # its entry was removed from the config: nothing acts on it
            self._close(inbound_id, msg, "dropped: no such hook any more")
            return
        if not msg.meta.get("group"):
            self._hand(hook, inbound_id, msg, 0)
            return
        group = self._group(msg.conversation)
        if group.last == 0.0 and not group.held:
            self._hand(hook, inbound_id, msg, 0)
            group.last = time.time()
            group.awaiting_post = self._thread(msg.conversation) is None
            return
        group.held.append((inbound_id, msg))
        self._note(hook.name, msg, "waiting")
        self._arm(hook, msg.conversation, group)

    def _announce(self, hook: HookConfig, msg: Inbound) -> None:
        fields = {k: v for k, v in dict(msg.meta.get("fields") or {}).items() if k not in RESERVED}
        self.events.emit(
            f"hook.{hook.name}", f"hook:{hook.name}", **fields, id=msg.message_id,
            kind=hook.kind, conversation=msg.conversation, place=hook.deliver_to,
            **{EVENT_KEY: msg.message_id},
        )  # fmt: skip

    # -- groups ------------------------------------------------------------------------
    def _group(self, conversation: str) -> Group:
        group = self.groups.get(conversation)
        if group is None:
            if len(self.groups) >= MAX_GROUPS:
                self._forget_idle()
            group = self.groups[conversation] = Group()
        return group

    def _forget_idle(self) -> None:
        """Groups with nothing held, no post awaited and their cooldown over leave: a
        group's next notification then goes straight to a turn, as it would anyway."""
        now = time.time()
        cooldown = max((h.cooldown_seconds for h in self.configs.values()), default=0.0)
        self.groups = {
            key: group for key, group in self.groups.items()
            if group.held or group.timer is not None or group.awaiting_post
            or now < group.last + cooldown
        }  # fmt: skip

    def _arm(self, hook: HookConfig, conversation: str, group: Group) -> None:
        if group.timer is not None or group.awaiting_post:
            return  # the post's delivery (or the timer set) releases it
        delay = max(0.0, group.last + hook.cooldown_seconds - time.time())
        loop = asyncio.get_running_loop()
        group.timer = loop.call_later(delay, self._release, hook, conversation)

    def _release(self, hook: HookConfig, conversation: str) -> None:
        group = self.groups.get(conversation)
        if group is None:
            return
        group.timer = None
        if not group.held:
            return
        if time.time() < group.last + hook.cooldown_seconds or group.awaiting_post:
            self._arm(hook, conversation, group)
            return
        held, group.held = group.held, []
        for inbound_id, msg in held[:-1]:
            self._close(inbound_id, msg, "coalesced")
        inbound_id, msg = held[-1]
        self._hand(hook, inbound_id, msg, len(held) - 1)
        group.last = time.time()

    def _thread(self, conversation: str) -> str | None:
        return self.store.get_kv(THREAD_KEY + conversation)

    def delivered(self, msg: Outbound, receipt: DeliveryReceipt) -> None:
        """The outbox delivered a post: a group's first post gives the group its thread;
        the first post for a delivery is its receipt-to-post time."""
        conversation = msg.conversation
        if conversation is None:
            return
        received = self._received.pop(conversation, None)
        if received is not None:
            self.metrics.post_seconds.labels(received[0]).observe(time.time() - received[1])
            self._set_last(received[0], "posted")
        group = self.groups.get(conversation)
        if group is None or not group.awaiting_post:
            return
        if receipt.thread and self._thread(conversation) is None:
            thread = msg.target.in_thread(receipt.thread)
            self.store.set_kv(THREAD_KEY + conversation, str(thread))
        group.awaiting_post = False
        group.last = time.time()  # the cooldown runs from the post people saw
        hook = self.configs.get(conversation.removeprefix("hook:").split("/", 1)[0])
        if hook is not None and group.held:
            self._arm(hook, conversation, group)

    # -- handing over ------------------------------------------------------------------
    def _hand(self, hook: HookConfig, inbound_id: int, msg: Inbound, replaced: int) -> None:
        thread = self._thread(msg.conversation) if msg.meta.get("group") else None
        target = thread or str(msg.reply_to)
        task = hook.action + _notes(thread is not None, replaced)
        store = self.store
        agent: str = hook.agent
        if agent == "worker":
            try:
                with store.tx():
                    store.mark_inbound(inbound_id, "routed")
                    self._spawn(hook, msg, task, target)
            except Exception as exc:  # the worker limit, say: the coordinator takes it
                log.warning("hook %s: no worker for %s (%s)", hook.name, msg.message_id, exc)
                agent = COORDINATOR
        if agent == COORDINATOR:
            with store.tx():
                store.mark_inbound(inbound_id, "routed")
                self.acts.send(_mail(hook, msg, task, target, inbound_id))
        self._seen.discard(inbound_id)  # closed: no scan returns it again
        if len(self._received) >= MAX_AWAITED:  # turns that posted nothing: forgotten
            self._received.pop(next(iter(self._received)))
        self._received.setdefault(msg.conversation, (hook.name, msg.received_at))
        self._note(hook.name, msg, f"handed to {agent}")

    def _spawn(self, hook: HookConfig, msg: Inbound, task: str, target: str) -> None:
        name = f"{hook.name[:20]}-{digest(msg.message_id)[:4]}"
        name = name if name[0].isalpha() else "h" + name
        data, source = payload_text(msg), source_of(hook)
        self.acts.spawn_on_data(name, task, data, source, msg.conversation, target)

    def _close(self, inbound_id: int, msg: Inbound, outcome: str) -> None:
        self.store.mark_inbound(inbound_id, "routed")
        self._seen.discard(inbound_id)
        self._note(str(msg.meta.get("hook")), msg, outcome)

    def _note(self, hook: str, msg: Inbound, outcome: str) -> None:
        fields = msg.meta.get("fields") or {}
        self.recent.appendleft({
            "at": msg.received_at, "hook": hook, "id": msg.message_id[-40:],
            "status": str(fields.get("status") or fields.get("event_type") or "")[:40],
            "outcome": outcome,
        })  # fmt: skip
        self._set_last(hook, outcome, msg.received_at)

    def _set_last(self, hook: str, outcome: str, at: float | None = None) -> None:
        entry = self.last.setdefault(hook, {"count": 0})
        if at is not None:
            entry.update(at=at, count=int(entry.get("count", 0)) + 1)
        entry["outcome"] = outcome
        self._dirty = True


def payload_text(msg: Inbound) -> str:
    """The trimmed payload (bot/ops/hooks_view.py) as the model reads it."""
    return msg.text or rendered(msg.meta.get("view"))


def source_of(hook: HookConfig) -> str:
    """What the payload's untrusted block says it is."""
    return f"{hook.kind} webhook {hook.name} (payload: data from whoever sent it)"


def _notes(in_thread: bool, replaced: int) -> str:
    notes = []
    if in_thread:
        notes.append("This is a later notification of a group you posted about: "
                     "answer in its thread, saying what changed.")  # fmt: skip
    if replaced:
        notes.append(f"{replaced} earlier notification(s) of this group came within the "
                     "cooldown; this is the newest.")  # fmt: skip
    return "".join(f"\n\n({n})" for n in notes)


def _mail(hook: HookConfig, msg: Inbound, task: str, target: str, inbound_id: int) -> BusMessage:
    return BusMessage(
        SENDER, COORDINATOR, task, kind="task", conversation=msg.conversation,
        meta={"reply_to": target, "hook": hook.name, "hook_data": payload_text(msg),
              "hook_source": source_of(hook), "hook_inbound": inbound_id},
    )  # fmt: skip


def _load(raw: str | None) -> dict[str, dict[str, Any]]:
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
