"""The human node: one inbox for every channel, the router, and the outbox.

`accept` is what a channel calls for a person's message, before it acks the
platform: it journals the message (deduplicated by the platform's message id),
routes it and hands it to the bus, all without waiting on any model. Agents speak
to people through `say`, which queues the message in the durable outbox.
The node also keeps the directory the router reads (live workers, open questions).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable

from bot.approvals.desk import ApprovalDesk
from bot.core.bus import Bus
from bot.core.events import EventLog
from bot.core.messages import (
    COORDINATOR,
    HUMAN,
    RECEIPT,
    STOP,
    BusMessage,
    DeliveryReceipt,
    Inbound,
    Outbound,
    Target,
)
from bot.core.names import platform_id
from bot.core.notices import SYSTEM_SPEAKER, answer_receipt, undeliverable, unverified_answer
from bot.core.progress import QUIET_SECONDS, WORKER_QUIET_SECONDS, Progress
from bot.inbox.files import FileStore
from bot.inbox.intake import FETCHING, FileIntake
from bot.inbox.people import People, Person
from bot.inbox.places import Origin
from bot.inbox.router import Directory, Route, route
from bot.inbox.scope import FileOwners
from bot.outbox.sender import Outbox
from bot.store.core import QuestionRow, QuestionStatus, Store

log = logging.getLogger(__name__)

#: the audit event of a refused reach into another conversation's work
ACCESS_REFUSED = "access.refused"


class HumanNode:
    def __init__(
        self,
        store: Store,
        bus: Bus,
        events: EventLog,
        home: Target | None,
        *,
        retry_base: float = 1.0,
        files: FileStore | None = None,
        people: People | None = None,
        progress: Progress | None = None,
        approvers: Iterable[str] = (),
        fence: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.people = people if people is not None else People([], store, "UTC")
        self.bus = bus
        self.events = events
        self.home = home
        self.directory = Directory()
        #: which conversation each saved file came from (bot/inbox/scope.py)
        self.file_owners = FileOwners(store)
        #: open questions an answer was routed to (the worker has not resumed yet)
        self.answering: set[str] = set()
        self.outbox = Outbox(
            store,
            events,
            retry_base=retry_base,
            on_delivered=self._delivered,
            on_failed=self._failed,
            fence=fence,
        )
        #: what people see of the work on their messages (bot/core/progress.py)
        self.progress = progress if progress is not None else Progress()
        #: gated tool calls waiting for a person (bot/approvals/desk.py)
        self.approvals = ApprovalDesk(store, events, self.say, approvers)
        #: downloads a message's files before it is routed (None: files are not fetched)
        self.intake = None if files is None else FileIntake(store, events, files, self.release)
        #: False on a follower node: it journals and announces, the leader routes
        self.routing = True

    # -- inbound ---------------------------------------------------------------------
    def accept(self, msg: Inbound) -> bool:
        """Journal and route a person's message in one transaction (one commit, before the
        channel acks). False when it was seen before."""
        if not self.routing:
            return self._journal_for_leader(msg)
        intake = self.intake
        if intake is not None and intake.must_hold(msg):
            with self.store.tx():
                held = self.store.journal(msg, status=FETCHING)
            if held is not None:
                intake.hold(held, msg)
                return True
            decision = None
        else:
            with self.store.tx():
                inbound_id = self.store.journal(msg, status="routed")
                decision = None if inbound_id is None else self._route(inbound_id, msg)
        if decision is None:
            self.events.emit("message.duplicate", HUMAN, channel=msg.channel, id=msg.message_id)
            return False
        self._routed(msg, decision)
        return True

    def release(self, inbound_id: int, msg: Inbound, notice: str | None = None) -> None:
        """Route a message held while its files were fetched; `notice` tells the person
        what could not be read."""
        with self.store.tx():
            decision = self._route(inbound_id, msg)
            self.store.mark_inbound(inbound_id, "routed")
            if notice:
                self.say(
                    Outbound(SYSTEM_SPEAKER, msg.reply_to, notice, msg.conversation, kind="notice")
                )
        self._routed(msg, decision)

    def refuse(self, channel: str, reason: str, **facts: object) -> None:
        """Record a message that no agent will see (unknown sender, bot, loop...)."""
        self.events.emit("message.refused", HUMAN, channel=channel, reason=reason, **facts)

    def _journal_for_leader(self, msg: Inbound) -> bool:
        """A follower's part: journal as pending and wake the leader at the commit."""
        with self.store.tx():
            inbound_id = self.store.journal(msg)
            if inbound_id is not None:
                self.store.notify("inbound")
        if inbound_id is None:
            self.events.emit("message.duplicate", HUMAN, channel=msg.channel, id=msg.message_id)
        return inbound_id is not None

    def restore(self) -> int:
        """After a restart: reload open questions, route what was journaled but not routed."""
        for q in self.store.open_questions():
            self.directory.add_question(q)
        self.approvals.restore()
        return self.route_pending()

    def route_pending(self) -> int:
        """Route what was journaled but not routed (before a restart, or by a follower
        node); a message whose files are still to fetch goes to the intake first."""
        pending = self.store.pending_inbound()
        for inbound_id, msg in pending:
            if self.intake is not None and self.intake.must_hold(msg):
                self.store.mark_inbound(inbound_id, FETCHING)
                self.intake.hold(inbound_id, msg)
                continue
            with self.store.tx():
                decision = self._route(inbound_id, msg)
                self.store.mark_inbound(inbound_id, "routed")
            self._routed(msg, decision)
        return len(pending)

    def _route(self, inbound_id: int, msg: Inbound) -> Route:
        """Inside the caller's transaction: the router's decision, as bus mail or a notice."""
        person = self.people.resolve(msg.channel, msg.sender)
        decision = route(msg, self.directory, platform_id(msg.channel, msg.sender.id))
        # a worker's open question here takes a bare "approve" as its answer
        unasked = decision.question is None
        if self.approvals.answers(msg, person.name if person.listed else None, unasked):
            return Route()  # a decision on a gated call: no agent reads it, nobody asked
        if decision.question is not None and msg.unverified:
            return self._unverified_answer(msg, decision.question.worker)
        # whom the agents now work for
        self.people.spoke(msg.conversation, person.name, platform_id(msg.channel, msg.sender.id))
        self.file_owners.add(msg.conversation, [a.path for a in msg.attachments if a.path])
        if decision.error is not None:
            notice = Outbound(
                SYSTEM_SPEAKER, msg.reply_to, decision.error, msg.conversation, kind="notice"
            )
            self.say(notice)
        if decision.refused is not None:
            self.refused(msg, person, "mention", f"worker {decision.refused}")
        for recipient in decision.recipients:
            self.bus.send(self._bus_message(inbound_id, msg, decision, recipient, person))
        if decision.question is not None and decision.question.worker in decision.recipients:
            self.answering.add(decision.question.id)
            self._receipt(msg, decision.question.worker, decision.stop)
        return decision

    def _receipt(self, msg: Inbound, worker: str, stop: bool) -> None:
        """An answer from a channel that shows no work under way (email) is acknowledged
        once, in its thread, in the transaction that routes it. The outbox row is keyed by
        the message's platform id: a redelivery or a re-route after a restart queues the
        same row, which the outbox keeps once. Never for a sender nobody verified (the
        forged address would get it); machine mail never gets this far."""
        if not msg.meta.get(RECEIPT) or msg.unverified or stop:
            return
        name = self.directory.workers.get(worker, worker)
        key = hashlib.sha256(f"{msg.channel}\x00{msg.message_id}".encode()).hexdigest()[:32]
        receipt = Outbound(SYSTEM_SPEAKER, msg.reply_to, answer_receipt(name), msg.conversation,
                           kind="notice", id=f"receipt-{key}")  # fmt: skip
        self.say(receipt)

    def refused(self, msg: Inbound, person: Person, action: str, resource: str) -> None:
        """An audit line: this person tried to reach another conversation's work."""
        self.events.emit(
            ACCESS_REFUSED, HUMAN, conversation=msg.conversation, person=person.name,
            person_id=platform_id(msg.channel, msg.sender.id), action=action,
            resource=resource, outcome="refused",
        )  # fmt: skip

    def _unverified_answer(self, msg: Inbound, worker: str) -> Route:
        """Mail nobody vouched for never answers a question (it could be in anyone's
        name): said to the sender, recorded, passed on to no agent."""
        name = self.directory.workers.get(worker, worker)
        self.refuse(msg.channel, "unverified sender: not taken as an answer", sender=msg.sender.id,
                    id=msg.message_id, worker=name)  # fmt: skip
        text = unverified_answer(name)
        self.say(Outbound(SYSTEM_SPEAKER, msg.reply_to, text, msg.conversation, kind="notice"))
        return Route()

    def _routed(self, msg: Inbound, decision: Route) -> None:
        if decision.recipients and not decision.stop:
            # the coordinator's turn ends the work it shows; a worker's shows a while
            quiet = QUIET_SECONDS if COORDINATOR in decision.recipients else WORKER_QUIET_SECONDS
            self.progress.received(msg, quiet)
        self.events.emit(
            "message.received",
            HUMAN,
            channel=msg.channel,
            conversation=msg.conversation,
            reply_to=str(msg.reply_to),
            sender=msg.sender.id,
            id=msg.message_id,
            to=decision.recipients or None,
            error=decision.error,
            question=decision.question.id if decision.question is not None else None,
        )

    @staticmethod
    def _bus_message(
        inbound_id: int, msg: Inbound, decision: Route, recipient: str, person: Person
    ) -> BusMessage:
        question = decision.question
        return BusMessage(
            sender=HUMAN,
            recipient=recipient,
            text=decision.text,
            kind="answer" if question is not None and question.worker == recipient else "human",
            conversation=msg.conversation,
            inbound_id=inbound_id,
            question_id=question.id if question is not None else None,
            meta={
                "reply_to": str(msg.reply_to),
                "sender": person.name if person.listed else msg.sender.display,
                "sender_id": msg.sender.id,
                "person_id": platform_id(msg.channel, msg.sender.id),
                "channel": msg.channel,
                "person": person.name,
                "timezone": person.timezone,
                "at": msg.received_at,
                **({"broadcast": True} if decision.broadcast else {}),
                **({"fresh": True} if decision.fresh else {}),
                **({STOP: True} if decision.stop else {}),
            },
            attachments=list(msg.attachments),
        )

    # -- outbound --------------------------------------------------------------------
    def say(self, msg: Outbound) -> None:
        self.outbox.put(msg)

    def _delivered(self, msg: Outbound, receipt: DeliveryReceipt) -> None:
        approval_id = msg.meta.get("approval_id")
        if msg.question_id is None and (approval_id is None or msg.meta.get("decision")):
            return
        refs = [*receipt.refs]
        if receipt.platform_id:
            refs.append(receipt.platform_id)
        if receipt.thread:
            refs.append(str(msg.target.in_thread(receipt.thread)))
        if msg.question_id is None:
            self.approvals.delivered(str(approval_id), refs, receipt.platform_id)
            return
        self.store.add_question_refs(msg.question_id, refs)
        self.directory.add_refs(msg.question_id, refs)

    def _failed(self, msg: Outbound, error: str) -> None:
        if self.home is None or msg.target == self.home or msg.kind == "failure":
            return
        text = undeliverable(msg.agent, msg.target, error)
        self.say(Outbound(SYSTEM_SPEAKER, self.home, text, kind="failure"))

    # -- directory -------------------------------------------------------------------
    def worker_started(self, worker_id: str, name: str, origin: Origin | None = None) -> None:
        """A worker runs; `origin` is where its task was asked (who may reach it)."""
        self.directory.workers[worker_id] = name
        self.directory.origins[worker_id] = origin or Origin(None)

    def worker_gone(self, worker_id: str) -> None:
        self.directory.workers.pop(worker_id, None)
        self.directory.origins.pop(worker_id, None)
        for q in self.directory.of_worker(worker_id):
            self.close_question(q.id, "cancelled")

    def open_question(self, q: QuestionRow) -> None:
        self.store.add_question(q)
        self.directory.add_question(q)
        self.events.emit("human.question", q.worker, question_id=q.id, target=q.target)

    def close_question(
        self, question_id: str, status: QuestionStatus, answer: str | None = None
    ) -> None:
        self.store.close_question(question_id, status, answer)
        self.answering.discard(question_id)
        question = self.directory.pop_question(question_id)
        if question is not None and status == "answered":
            self.events.emit("human.response", question.worker, question_id=question_id)
