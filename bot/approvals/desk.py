"""The approval desk: gated tool calls waiting for a person's yes or no.

Core state lives in the store (`bot/store/approvals.py`); the desk keeps the pending
requests the router needs in memory, reads answers (`approve` / `deny <reason>` as a
reply in the request's thread, email reply or terminal line; buttons call `click`),
checks who may decide, and records each decision once: the guarded UPDATE with the
decider's resolved person, platform id and how they decided, the notice saying so, and
the wake-up of the waiting agent. The decision is never a message to the model: the
waiting agent reads the row.

By email a decision counts only as a reply to the request mail that keeps its code in
the subject: a per-request random secret (kept in the row's refs as `code:<secret>`)
that appears only in the request itself, never in an event, a status or a note (the
approval id is not a secret: events and status name it). Mail whose sender no
receiving server verified (EMAIL_UNVERIFIED=accept) decides nothing.

Who may decide: a listed approver (SWITCHBOARD_APPROVERS), the requester included;
with no approvers listed, anyone allowed to talk to the bot except the person who asked
for the call, anyone who spoke to the asking worker since it started, and a program (an
HTTP API caller, `api:<name>`, decides only when listed); the terminal always. A call
asked in a person's conversation whose person is unknown is decided only by a listed
approver or the terminal (never fail open). A button counts only in the
conversation its request was posted in (a payload replayed elsewhere is refused).
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from bot.approvals.text import decision_text, request_text
from bot.core import notices
from bot.core.events import EventLog
from bot.core.messages import Inbound, Outbound, Sender, Target, TargetError
from bot.core.names import operator_conversation, platform_id
from bot.core.redact import args_digest
from bot.core.replies import latest_waiting
from bot.store.approvals import ApprovalRow, How
from bot.store.core import Store

SPEAKER = "switchboard"
_APPROVE = re.compile(r"^\s*(?:approve|approved)\s*[.!]?\s*$", re.IGNORECASE)
_DENY = re.compile(r"^\s*(?:deny|denied)\b[\s:,.-]*(.*)$", re.IGNORECASE | re.DOTALL)
TERMINAL = "terminal"
#: channels whose senders are programs (the HTTP API): they decide only when listed
PROGRAMS = frozenset({"api"})

Outcome = Literal["decided", "already", "unknown", "refused"]


@dataclass(frozen=True, slots=True)
class Answer:
    approve: bool
    reason: str | None


def could_be_answer(text: str) -> bool:
    """The router's first look at every message, before any regex: an answer starts
    with `a` or `d` (lstrip returns the same string when there is nothing to strip)."""
    return text.lstrip()[:1] in _FIRST


_FIRST = frozenset("aAdD")


def parse_answer(text: str) -> Answer | None:
    """`approve`, or `deny <reason>` (the whole message), else None."""
    if _APPROVE.match(text):
        return Answer(True, None)
    denied = _DENY.match(text)
    if denied:
        return Answer(False, denied.group(1).strip() or None)
    return None


@dataclass(frozen=True, slots=True)
class Decider:
    """Who decides: the resolved person (a listed person's name, else the sender's id),
    their platform id (`slack:U123`, `email:ann@example.com`, `terminal`), and how."""

    name: str
    platform_id: str
    how: How
    sender: Sender
    listed: str | None = None  # the `[[people]]` name, when the sender is a listed person

    @classmethod
    def of(cls, channel: str, sender: Sender, person: str | None, how: How) -> Decider:
        ident = platform_id(channel, sender.id)
        return cls(person or sender.id, ident, how, sender, person)


def refusal(approvers: Iterable[str], decider: Decider, row: ApprovalRow) -> str | None:
    """Why this person may not decide this call, or None."""
    listed = [a for a in approvers if a.strip()]
    if listed:
        return None if may_decide(listed, decider.sender, decider.listed) else NOT_AN_APPROVER
    if decider.platform_id == TERMINAL:
        return None
    if decider.platform_id.partition(":")[0] in PROGRAMS:
        return NOT_A_PERSON
    if (
        row.requester is None
        and row.requester_id is None
        and not operator_conversation(row.conversation)
    ):  # a person's conversation, but whose is not known: nobody unlisted decides
        return NOBODY_KNOWN
    asked_by = {row.requester_id, row.requester} - {None, ""}
    if asked_by & {decider.platform_id, decider.listed}:
        return NOT_YOUR_OWN
    if set(row.held.get("involved") or ()) & {decider.platform_id, decider.listed}:
        return SPOKE_TO_IT
    return None


def may_decide(approvers: Iterable[str], sender: Sender, person: str | None = None) -> bool:
    """SWITCHBOARD_APPROVERS names platform ids, email addresses or person names; empty
    means anyone allowed to talk to the bot (the channel's allow-list already held).

    A person name matches the person the human node resolved from the sender's ids
    (`[[people]]`, or a Slack id linked by email): `person`, given only for listed
    people. A display name never counts: anyone can set theirs to "Ann"."""
    allowed = {a.strip().lower() for a in approvers if a.strip()}
    if not allowed:
        return True
    mine = {sender.id.lower(), (sender.email or "").lower(), (person or "").lower()} - {""}
    return bool(allowed & mine)


class ApprovalDesk:
    def __init__(
        self, store: Store, events: EventLog, say: Callable[[Outbound], None],
        approvers: Iterable[str] = (),
    ) -> None:  # fmt: skip
        self.store = store
        self.events = events
        self.say = say
        self.approvers: list[str] = list(approvers)
        self.pending: dict[str, ApprovalRow] = {}
        self._wakes: dict[str, asyncio.Event] = {}

    def restore(self) -> None:
        self.pending = {row.id: row for row in self.store.approvals.pending()}

    # -- requests ----------------------------------------------------------------------
    def request(self, row: ApprovalRow, request: Outbound) -> None:
        """Inside the caller's transaction (the agent's checkpoint). The request gets its
        code, which only the request message shows (an email's subject)."""
        secret = secrets.token_hex(CODE_BYTES)
        row.refs = [*row.refs, CODE + secret]
        request.meta[APPROVAL_CODE] = secret
        self.store.approvals.add(row)
        self.say(request)
        self.pending[row.id] = row
        self.events.emit(
            "approval.requested", row.agent, approval_id=row.id, tool=row.tool,
            target=row.target, conversation=row.conversation, person=row.requester,
            person_id=row.requester_id, args_digest=args_digest(row.args), outcome="pending",
        )  # fmt: skip

    def delivered(self, approval_id: str, refs: list[str], platform_id: str | None) -> None:
        """The request was posted: its thread references, and its own message id (kept as
        `posted:<id>`, so that the decision can edit it where the platform allows)."""
        posted = [POSTED + platform_id] if platform_id else []
        merged = self.store.approvals.add_refs(approval_id, [*refs, *posted])
        row = self.pending.get(approval_id)
        if row is not None:
            row.refs = merged
            return
        decided = self.store.approvals.get(approval_id)
        if decided is not None and decided.status != "pending" and posted:
            # decided before this receipt landed (a click right after the post): the
            # decision notice could not name the message; edit it now, posting nothing
            meta = {**decision_meta(decided), "edit_only": True}
            if meta.get("edit"):
                self.say(self._notice(decided, meta))

    def heard(self, approval_id: str) -> None:
        """Another node recorded a decision: the agent waiting for it reads it now."""
        self.pending.pop(approval_id, None)
        self.wake(approval_id).set()

    def wake(self, approval_id: str) -> asyncio.Event:
        return self._wakes.setdefault(approval_id, asyncio.Event())

    def forget(self, approval_id: str) -> None:
        self._wakes.pop(approval_id, None)

    # -- answers -----------------------------------------------------------------------
    def answers(self, msg: Inbound, person: str | None, unasked: bool = True) -> bool:
        """Inside the router's transaction: True when the message was an approval answer
        (decided, or answered with a short note); it then goes to no agent. With nothing
        pending here and a question open (`unasked` False), it is that question's answer."""
        if not could_be_answer(msg.text):
            return False
        answer = parse_answer(msg.text)
        if answer is None:
            return False
        row = self.waiting_in(msg)
        if row is None:
            if unasked:
                self._note(msg.reply_to, msg.conversation, NOTHING_PENDING)
            return unasked
        if not replies_to_request(msg, row):
            self._note(msg.reply_to, msg.conversation, NOT_THE_REQUEST_MAIL)
            return True
        if msg.unverified:  # in anyone's name: said, recorded, nothing decided
            self._note(msg.reply_to, msg.conversation, NOT_VERIFIED)
            self.events.emit(
                "message.refused", SPEAKER, channel=msg.channel, approval_id=row.id,
                reason="unverified sender: decides no approval", sender=msg.sender.id,
                id=msg.message_id,
            )  # fmt: skip
            return True
        decider = Decider.of(msg.channel, msg.sender, person, _HOW.get(msg.channel, "reply"))
        why = self.refused(decider, row)
        if why is not None:
            self._note(msg.reply_to, msg.conversation, why)
            return True
        self.decide(row.id, answer.approve, decider.name, answer.reason,
                    decider_id=decider.platform_id, how=decider.how)  # fmt: skip
        return True

    def refused(self, decider: Decider, row: ApprovalRow) -> str | None:
        """Why `decider` may not decide `row`, or None (every path asks here, so a check
        of an email reply's request code belongs here too); a refusal is an audit line."""
        why = refusal(self.approvers, decider, row)
        if why is not None:
            self.events.emit(
                "access.refused", SPEAKER, conversation=row.conversation, person=decider.name,
                person_id=decider.platform_id, action="decide", resource=f"approval {row.id}",
                outcome="refused",
            )  # fmt: skip
        return why

    def click(
        self, approval_id: str, approve: bool, decider: Decider, where: str, *, shown: bool = False
    ) -> tuple[Outcome, str]:
        """A button clicked in channel (or thread) `where`: (outcome, the text to show) --
        the decision, or a private note. `shown`: the channel updates the request
        message itself (Discord's answer)."""
        row = self.store.approvals.get(approval_id)
        if row is None:
            return "unknown", notices.APPROVAL_TAKEN
        if not posted_in(row, decider.platform_id.split(":", 1)[0], where):
            return "refused", NOT_HERE
        why = self.refused(decider, row)
        if why is not None:
            return "refused", why
        outcome = self.decide(approval_id, approve, decider.name, None, shown=shown,
                              decider_id=decider.platform_id, how=decider.how)  # fmt: skip
        if outcome != "decided":
            return outcome, notices.APPROVAL_TAKEN
        row = self.store.approvals.get(approval_id)
        return outcome, decision_text(row) if row is not None else ""

    def waiting_in(self, msg: Inbound) -> ApprovalRow | None:
        """The latest pending request this message answers: an exact platform reference
        (an email's In-Reply-To) first, then the same thread."""
        return latest_waiting(
            msg,
            self.pending.values(),
            lambda r: (r.conversation, r.target),
            lambda r: r.requested_at,
        )

    def decide(
        self,
        approval_id: str,
        approve: bool,
        who: str,
        reason: str | None,
        *,
        shown: bool = False,
        decider_id: str | None = None,
        how: How | None = None,
    ) -> Outcome:
        """Record a decision once (the first counts), tell the thread, wake the agent.
        `who` is the decider's resolved person, `decider_id` their platform id, `how`
        the way they decided (every path, the dashboard's too, comes through here)."""
        with self.store.tx():
            if not self.store.approvals.decide(approval_id, approve, who, reason, decider_id, how):
                known = self.store.approvals.get(approval_id) is not None
                return "already" if known else "unknown"
            row = self.store.approvals.get(approval_id)
            assert row is not None
            self.say(self._notice(row, decision_meta(row, edit=not shown)))
            self.store.notify(f"approval:{approval_id}")
            self.events.emit(
                "approval.decided", row.agent, approval_id=row.id, tool=row.tool,
                conversation=row.conversation, person=row.requester,
                person_id=row.requester_id, args_digest=args_digest(row.args), decider=who,
                decider_id=decider_id, how=how,
                outcome="timeout" if how == "timeout" else "approved" if approve else "denied",
                reason=reason,
            )  # fmt: skip
        self.pending.pop(approval_id, None)
        self.wake(approval_id).set()
        return "decided"

    @staticmethod
    def _notice(row: ApprovalRow, meta: dict[str, object]) -> Outbound:
        target = Target.parse(row.target)
        return Outbound(SPEAKER, target, decision_text(row), row.conversation, kind="notice",
                        meta=meta)  # fmt: skip

    def _note(self, target: Target, conversation: str, text: str) -> None:
        self.say(Outbound(SPEAKER, target, text, conversation, kind="notice"))


_HOW: dict[str, How] = {"email": "email", "terminal": "terminal", "api": "api"}  # else a reply
POSTED = "posted:"
CODE = "code:"
CODE_BYTES = 8
#: the request message's meta key holding its code (for the channel that shows it)
APPROVAL_CODE = "approval_code"


def code(secret: str) -> str:
    """How a code shows in the request mail's subject, so a reply carries it."""
    return f"[#{secret}]"


def code_of(row: ApprovalRow) -> str:
    """The request's secret code; a request made before codes were secrets has its id."""
    found = [ref[len(CODE) :] for ref in row.refs if ref.startswith(CODE)]
    return found[0] if found else row.id


def replies_to_request(msg: Inbound, row: ApprovalRow) -> bool:
    """By email, a decision counts only as a reply to the request mail itself (its
    Message-ID in In-Reply-To/References) whose subject still carries the code; a
    reply elsewhere in the thread may answer something else."""
    if msg.channel != "email":
        return True
    posted = {ref[len(POSTED) :] for ref in row.refs if ref.startswith(POSTED)}
    subject = str(msg.meta.get("subject") or "")
    return bool(posted & set(msg.thread_refs)) and code(code_of(row)) in subject


EDITABLE = ("slack", "discord")  # platforms whose messages the bot can edit


def decision_meta(row: ApprovalRow, edit: bool = True) -> dict[str, object]:
    """The decision notice also edits the request message where the platform allows
    (Slack chat.update, a Discord message edit): its id and original text ride along."""
    meta: dict[str, object] = {"approval_id": row.id, "decision": True}
    posted = [ref[len(POSTED) :] for ref in row.refs if ref.startswith(POSTED)]
    if posted and edit and row.target.split(":", 1)[0] in EDITABLE:
        meta.update(edit=posted[0], request=request_text(row))
    return meta


def posted_in(row: ApprovalRow, channel: str, where: str) -> bool:
    """Whether a click in `channel`'s conversation `where` (a Slack channel, a Discord
    channel or thread) is where the request was posted: its target or a receipt's."""
    places: set[str] = set()
    for text in (row.target, *row.refs):
        try:
            target = Target.parse(text)
        except TargetError:
            continue  # `posted:<id>`
        if target.kind == channel:
            places |= {target.address, target.thread or target.address}
    return bool(where) and where in places


# -- sentences to people ---------------------------------------------------------------
NOTHING_PENDING = "There is no approval waiting in this conversation."
NOT_AN_APPROVER = "Only approvers (SWITCHBOARD_APPROVERS) can decide this; nothing was changed."
NOT_A_PERSON = (
    "A program (the HTTP API) decides a call only when SWITCHBOARD_APPROVERS names it "
    "(api:<caller>); nothing was changed."
)
NOT_YOUR_OWN = (
    "You asked for this call, so someone else has to decide it (or list approvers in "
    "SWITCHBOARD_APPROVERS); nothing was changed."
)
SPOKE_TO_IT = (
    "You spoke to the agent that asks for this call, so someone else has to decide it (or "
    "list approvers in SWITCHBOARD_APPROVERS); nothing was changed."
)
NOBODY_KNOWN = (
    "Nobody knows who asked for this call, so only an approver listed in "
    "SWITCHBOARD_APPROVERS, the terminal or the dashboard can decide it; nothing was changed."
)
NOT_HERE = "This button belongs to a request in another conversation; nothing was changed."
NOT_THE_REQUEST_MAIL = (
    "To decide by email, reply to the approval request mail itself, keeping the [#…] "
    "code of its subject; nothing was changed."
)
NOT_VERIFIED = (
    "Your mail could not be verified (the mail server did not vouch for its sender), so "
    "it decides nothing; nothing was changed."
)
