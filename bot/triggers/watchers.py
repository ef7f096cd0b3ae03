"""The two triggers that are not clocks: `on_event` and `on_idle`.

Both follow the event log through `EventLog.subscribe`. Subscribers are called
synchronously by `emit`, possibly inside a store transaction, so a match only
schedules the firing on the loop (`call_soon`); nothing is written from inside.

- `on_event`: the event type matches `event_pattern` (shell-style, `worker.*`), and
  every `filter` key equals the event's field (`agent_id` is the event's agent),
  compared case-insensitively as text; a list-valued field (`to` of
  `message.received`) matches when one of its items does. Every conversation is its
  own: a trigger made in a person's conversation sees only that conversation's events
  (its messages, its workers' work, its approvals); the operator's (the config file's,
  or one made by work no person's message started) sees every event. The note it
  fires with names the event's type, agent and ids, never what was said or done
  (texts, tasks, results). A hook's events (`hook.<name>`, bot/ops/hooks_desk.py) name
  the channel the hook posts to (`place`): a trigger made in a conversation of that
  channel sees them, as the people there see its posts. Events of the trigger engine
  itself (`trigger.*`) and the trigger's own posts never match, and a trigger fires at most once per
  `cooldown_seconds`, never more often than once per `MIN_COOLDOWN_SECONDS` (10 s).
  An event that carries an `event_key` (a hook delivery's id) is the same event each
  time it is emitted (again after a restart): its fire key is made from that key, so
  the trigger's durable claim (`trigger_runs`) refuses a second firing.
- `on_idle`: the watched agent's last activity is its last event (`*` watches every
  agent). The trigger fires `idle_seconds` after it and re-arms: the next firing is
  `idle_seconds` after the later of that firing and the next activity. After a
  restart the clock starts at start-up.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import Callable
from typing import Any

from bot.core.events import EVENT_KEY, Event
from bot.core.messages import Target, TargetError
from bot.core.names import operator_conversation
from bot.core.trigger_spec import MIN_COOLDOWN_SECONDS
from bot.store.trigger_rows import TriggerRow

#: fire(row, fire_key, note) — the engine's firing entry point.
Fire = Callable[[TriggerRow, str, str], Any]
#: the conversation an event belongs to (its own field, else its worker's origin)
Owner = Callable[[Event], str | None]
ANY_AGENT = "*"
_IGNORED_PREFIX = "trigger."
#: the only fields a firing's note carries: ids and outcomes, never content
NOTE_FIELDS = ("id", "question_id", "approval_id", "tool", "status", "outcome", "kind")


def sees(row: TriggerRow, event: Event, owner: Owner) -> bool:
    """Whether the trigger may know of the event at all: the operator's (the config
    file's, or made by work no person's message started) sees every event, one made in
    a person's conversation only that conversation's; none its own posts."""
    if event.data.get("trigger_id") == row.id:
        return False
    if everything(row):
        return True
    return owner(event) == row.conversation or _in_place(row, event.data.get("place"))


def _in_place(row: TriggerRow, place: object) -> bool:
    """The event names a channel (a hook's `deliver_to`) the trigger was made in."""
    if not isinstance(place, str) or not row.origin_target:
        return False
    try:
        here, there = Target.parse(row.origin_target), Target.parse(place)
    except TargetError:
        return False
    return (here.kind, here.address) == (there.kind, there.address)


def everything(row: TriggerRow) -> bool:
    """A trigger of the operator's: from the config file, or made in no person's
    conversation (by a worker a config trigger started)."""
    return row.source == "config" or operator_conversation(row.conversation)


def matches(row: TriggerRow, event: Event) -> bool:
    config = row.spec.config
    if event.type.startswith(_IGNORED_PREFIX):
        return False
    if not fnmatch.fnmatchcase(event.type, config["event_pattern"]):
        return False
    for key, wanted in config.get("filter", {}).items():
        value = event.agent_id if key == "agent_id" else event.data.get(key)
        if not _equal(value, str(wanted).casefold()):
            return False
    return True


def _equal(value: Any, wanted: str) -> bool:
    """The field is the wanted text, or (a list) holds it; case-insensitive."""
    if value is None:
        return False
    if isinstance(value, list | tuple | set):
        return any(_equal(item, wanted) for item in value)
    return str(value).casefold() == wanted


def describe_event(event: Event) -> str:
    """The event's type, agent and ids: what happened is for the agent to look up in
    its own conversation, so no text of another reaches it through a trigger."""
    shown = [(k, event.data[k]) for k in NOTE_FIELDS if event.data.get(k) not in (None, "")]
    data = "".join(f", {k}={str(v)[:80]}" for k, v in shown)
    return f"(Triggered by event {event.type} from {event.agent_id or '-'}{data})"


def event_fire_key(event: Event) -> str:
    """The fire key of a firing on this event: its own `event_key` when it has one (the
    same event emitted again is the same firing), else its time."""
    once = event.data.get(EVENT_KEY)
    if isinstance(once, str) and once:
        return f"event:{event.type}:key:{once[:300]}"
    return f"event:{event.type}:{event.ts:.6f}"


def cooldown(row: TriggerRow) -> float:
    """The least time between two firings: its own, never under the floor."""
    return max(float(row.spec.config.get("cooldown_seconds", 0)), MIN_COOLDOWN_SECONDS)


class EventWatch:
    def __init__(self, fire: Fire, owner: Owner) -> None:
        self.fire = fire
        self.owner = owner
        self.rows: dict[str, TriggerRow] = {}
        #: per trigger watched (bounded by `rows`: an entry leaves with its trigger)
        self._last_fired: dict[str, float] = {}

    def add(self, row: TriggerRow) -> None:
        self.rows[row.id] = row

    def remove(self, trigger_id: str) -> None:
        self.rows.pop(trigger_id, None)
        self._last_fired.pop(trigger_id, None)

    def on_event(self, event: Event) -> None:
        for row in list(self.rows.values()):
            if matches(row, event) and sees(row, event, self.owner) and self._cool(row, event.ts):
                loop = asyncio.get_running_loop()
                key = event_fire_key(event)
                loop.call_soon(self.fire, row, key, describe_event(event))

    def _cool(self, row: TriggerRow, now: float) -> bool:
        if now - self._last_fired.get(row.id, float("-inf")) < cooldown(row):
            return False
        self._last_fired[row.id] = now
        return True


class IdleWatch:
    def __init__(self, fire: Fire) -> None:
        self.fire = fire
        self.rows: dict[str, TriggerRow] = {}
        #: per trigger watched (bounded by `rows`: both leave with their trigger)
        self._deadline: dict[str, float] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def add(self, row: TriggerRow, last_activity: float | None = None) -> None:
        self.rows[row.id] = row
        self._arm(row, time.time() if last_activity is None else last_activity)

    def remove(self, trigger_id: str) -> None:
        self.rows.pop(trigger_id, None)
        self._deadline.pop(trigger_id, None)
        timer = self._timers.pop(trigger_id, None)
        if timer is not None:
            timer.cancel()

    def stop(self) -> None:
        for trigger_id in list(self.rows):
            self.remove(trigger_id)

    def next_fire(self, trigger_id: str) -> float | None:
        return self._deadline.get(trigger_id)

    def on_event(self, event: Event) -> None:
        if event.type.startswith(_IGNORED_PREFIX):
            return
        agent = event.agent_id.lower()
        for row in list(self.rows.values()):
            if row.spec.config["watch_agent"] in (agent, ANY_AGENT):
                self._arm(row, event.ts)

    def _arm(self, row: TriggerRow, since: float) -> None:
        deadline = since + row.spec.config["idle_seconds"]
        self._deadline[row.id] = deadline
        old = self._timers.pop(row.id, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        delay = max(0.0, deadline - time.time())
        self._timers[row.id] = loop.call_later(delay, self._due, row.id, deadline)

    def _due(self, trigger_id: str, deadline: float) -> None:
        row = self.rows.get(trigger_id)
        if row is None:
            return
        self.fire(
            row,
            f"idle:{deadline:.6f}",
            f"(No activity from "
            f"{row.spec.config['watch_agent']} for {row.spec.config['idle_seconds']:g}s.)",
        )
        self._arm(row, time.time())
