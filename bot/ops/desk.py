"""What the operator surface is handed: the parts it reads and the acts it may do.

The composition root (bot/operating.py) builds one `OpsView` from the built app and hands
it to the `Operator`; no module of `bot/ops/` sees the app. As slack_bolt hands a listener
exactly `ack`, `say`, `client` and `context`, the view holds what the pages, `/metrics`,
`/healthz`, the API and the hooks read, and `Acts` names every change they make to the
rest of the runtime: each is one call the root binds (to the human node, the bus, the
team, the scheduler). What ops writes of its own (reminders sent, channel health, hook
deliveries journaled) goes to the store, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.approvals.desk import Outcome
from bot.core.channel import Channel
from bot.core.events import EventLog
from bot.core.messages import BusMessage, Inbound, Outbound, Target
from bot.core.progress import Progress
from bot.inbox.people import People
from bot.inbox.router import Directory
from bot.ledger.budget import Budget
from bot.ledger.usage import Ledger
from bot.store.approvals import ApprovalRow, How
from bot.store.core import Store, WorkerRow
from bot.store.lease import Leader
from config.settings import Settings


class ModelLoad(Protocol):
    """The model client's load (agents/model/llm.py `Provider`)."""

    @property
    def in_flight(self) -> int: ...
    @property
    def waiting(self) -> int: ...


class Leadership(Protocol):
    """This node among the nodes (bot/leadership.py `Node`)."""

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    def runs(self, channel_kind: str) -> bool: ...
    def leader(self) -> Leader: ...
    def to_json(self) -> dict[str, Any]: ...


class Pending(Protocol):
    """The tool calls waiting for a person's yes (bot/approvals/desk.py `ApprovalDesk`)."""

    @property
    def pending(self) -> Mapping[str, ApprovalRow]: ...


class Inbox(Protocol):
    """What ops reads of the human node (bot/inbox/human.py `HumanNode`): the open
    questions and workers' names, the people, the home target, the approvals pending,
    the work people see under way."""

    @property
    def directory(self) -> Directory: ...
    @property
    def people(self) -> People: ...
    @property
    def home(self) -> Target | None: ...
    @property
    def answering(self) -> Collection[str]: ...
    @property
    def progress(self) -> Progress: ...
    @property
    def approvals(self) -> Pending: ...


class Decide(Protocol):
    """Record a person's decision on a pending call (`ApprovalDesk.decide`)."""

    def __call__(
        self,
        approval_id: str,
        approve: bool,
        who: str,
        reason: str | None,
        *,
        decider_id: str | None = None,
        how: How | None = None,
    ) -> Outcome: ...


class SpawnOnData(Protocol):
    """Start a worker whose task carries untrusted data (`App.spawn_on_data`)."""

    def __call__(
        self, name: str, task: str, data: str, source: str, conversation: str, target: str
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Acts:
    """Every change the operator surface makes outside its own rows, by name."""

    #: put a message into the durable outbox
    say: Callable[[Outbound], None]
    #: take a message in as a person's: journaled and routed (False: seen before)
    take_in: Callable[[Inbound], bool]
    #: mail an agent through the bus
    send: Callable[[BusMessage], int]
    #: a question's answer is on its way to its worker
    answering: Callable[[str], None]
    decide: Decide
    #: stop a worker by name: what it says, or LookupError why none was stopped
    stop_worker: Callable[[str], Awaitable[str]]
    #: end the work shown under way in a conversation
    end_progress: Callable[[str], None]
    #: cancel an active or paused trigger (False: no such trigger)
    cancel_trigger: Callable[[str], bool]
    spawn_on_data: SpawnOnData


@dataclass(frozen=True, slots=True)
class OpsView:
    """What the operator surface reads, and its `acts`."""

    settings: Settings
    store: Store
    events: EventLog
    ledger: Ledger
    budget: Budget
    inbox: Inbox
    #: the app's channels (the list itself: a channel added later is seen)
    channels: Sequence[Channel]
    #: the kinds of channel the outbox delivers to (the API's own among them when on)
    outbox_kinds: Container[str]
    node: Leadership
    model: ModelLoad
    acts: Acts
    #: when the process started (unix time)
    started_at: float
    #: the rows of the workers running in this process, by id
    live_workers: Callable[[], Mapping[str, WorkerRow]]
    #: how many conversations the coordinator has under way
    sessions: Callable[[], int]
    #: whether this process runs the agents now
    leading: Callable[[], bool]
    #: whether the scheduler runs
    scheduling: Callable[[], bool]
