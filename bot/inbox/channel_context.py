"""What the core hands a channel: a narrow context, not the human node.

A channel needs to journal what people say (`accept`, before it acks the platform),
record what it refuses, tell a person something at once (`notify`, through the
outbox), keep its own state (thread memory, watermarks, attempt records: `store`, typed
as the slice `ChannelStore`), report its health, pace its posts (`pacer`) and hand
files to the intake, and link a sender to a listed person (`people`). Nothing else of
the core is reachable from here: a channel cannot route, read other tables or reach
the agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.approvals.desk import Decider
from bot.core.channel import ChannelStore
from bot.core.events import EventLog
from bot.core.messages import Inbound, Outbound, Sender
from bot.inbox.human import HumanNode
from bot.inbox.intake import FileIntake
from bot.inbox.people import People
from bot.ledger.report import full_status
from bot.outbox.sender import Pacer
from bot.store.core import ACTIVE_WORKER_STATES


@dataclass(slots=True)
class Waiting:
    """(name, state, task, since) of active workers; (who asks, question, where, since)
    of open questions; (who asks, tool, where, since) of pending approvals."""

    workers: list[tuple[str, str, str, float]] = field(default_factory=list)
    questions: list[tuple[str, str, str, float]] = field(default_factory=list)
    approvals: list[tuple[str, str, str, float]] = field(default_factory=list)


class ChannelContext:
    def __init__(self, human: HumanNode) -> None:
        self._human = human
        self.store: ChannelStore = human.store
        self.events: EventLog = human.events
        self.pacer: Pacer = human.outbox.pacer
        #: downloads a message's files before it is routed (None: files are not fetched)
        self.intake: FileIntake | None = human.intake
        #: the configured people, to link a platform id to a person
        self.people: People = human.people

    def accept(self, msg: Inbound) -> bool:
        """Journal and route a person's message (one commit, before the channel acks).
        False when it was seen before."""
        return self._human.accept(msg)

    def refuse(self, channel: str, reason: str, **facts: object) -> None:
        """Record a message that no agent will see (unknown sender, bot, loop...)."""
        self._human.refuse(channel, reason, **facts)

    def notify(self, msg: Outbound) -> None:
        """Tell a person something (a runtime notice), through the durable outbox."""
        self._human.say(msg)

    def decide(
        self,
        channel: str,
        approval_id: str,
        approve: bool,
        sender: Sender,
        where: str,
        shown: bool = False,
    ) -> tuple[str, str]:
        """An Approve / Deny button clicked in the platform's channel or thread `where`:
        ("decided" | "already" | "unknown" | "refused", the text to show: the decision
        for the request message, else a private note). `shown`: the channel shows the
        decision on the request message itself."""
        person = self._human.people.resolve(channel, sender)
        decider = Decider.of(channel, sender, person.name if person.listed else None, "button")
        return self._human.approvals.click(approval_id, approve, decider, where, shown=shown)

    def set_health(self, channel: str, state: str, detail: str = "") -> None:
        self.store.set_health(channel, state, detail)

    def status_text(self) -> str:
        """`switchboard status` as text (the terminal's /status)."""
        return full_status(self._human.store)

    def waiting(self) -> Waiting:
        """What runs and what waits for whom (a Slack App Home, a status card)."""
        store = self._human.store
        names = self._human.directory.workers
        return Waiting(
            workers=[(w.name, w.status, w.task, w.updated_at)
                     for w in store.workers(ACTIVE_WORKER_STATES)],
            questions=[(names.get(q.worker, q.worker), q.question, q.target, q.asked_at)
                       for q in store.open_questions()],
            approvals=[(a.speaker, a.tool, a.target, a.requested_at)
                       for a in store.approvals.pending()],
        )  # fmt: skip
