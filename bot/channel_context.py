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

from collections.abc import Callable

from bot.approvals.desk import Decider
from bot.core.channel import ChannelStore
from bot.core.events import EventLog
from bot.core.messages import Inbound, Outbound, Sender
from bot.core.names import platform_id
from bot.inbox.human import HumanNode
from bot.inbox.intake import FileIntake
from bot.inbox.people import People
from bot.ledger.catchup import catchup, catchup_text
from bot.ledger.personal import Mine, mine, personal_status
from bot.ledger.report import full_status
from bot.outbox.sender import Pacer


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
        """`switchboard status` as text: the whole of it, for the operator's own console
        (the terminal's /status)."""
        return full_status(self._human.store)

    def status_for(self, channel: str, user: str) -> str:
        """`/switchboard status` for one person of a channel: their conversations' work,
        everyone else's only counted (bot/ledger/personal.py)."""
        names = self._human.directory.workers
        return personal_status(self._human.store, self._mine(channel, user), names)

    def waiting_for(self, channel: str, user: str) -> Mine:
        """What runs and what waits in one person's conversations (a Slack App Home)."""
        return mine(self._human.store, self._mine(channel, user), self._human.directory.workers)

    def catchup_for(
        self,
        channel: str,
        user: str,
        link: Callable[[str], str] = str,
        escape: Callable[[str], str] = str,
        email: str = "",
        room: int = 0,
    ) -> str:
        """`catchup` for one person of a channel: what agents said in their own
        conversations since they last spoke (bot/ledger/catchup.py); no model call.
        `link` shows a target as the channel links it, `escape` the channel's markup;
        at most `room` characters."""
        idents = self._idents(channel, user, email)
        people = self._human.people
        found = catchup(self._human.store, people.conversations_of(idents),
                        people.last_spoke(idents), self._human.directory.workers)  # fmt: skip
        return catchup_text(found, link, escape, room=room)

    def _mine(self, channel: str, user: str) -> set[str]:
        """The conversations a person spoke in, under any id of theirs."""
        return self._human.people.conversations_of(self._idents(channel, user))

    def _idents(self, channel: str, user: str, email: str = "") -> set[str]:
        """Every platform id of the person behind `user` (a listed person's all)."""
        people = self._human.people
        person = people.resolve(channel, Sender(user, email=email))
        ids = people.ids_of(person.name) if person.listed else []
        return {platform_id(channel, user), *(platform_id(k, i) for k, i in ids)}
