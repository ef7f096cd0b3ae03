"""What a logged-in operator does from the dashboard: answer an open question,
approve or deny a pending call (with a reason), stop a worker, start a conversation
afresh.

Each is a POST form carrying the CSRF token (`Access.csrf`); one without it, or
without a session, changes nothing. What an action did is said on the page its form
was on: the answer is a 303 redirect there (bot/ops/flash.py), so a reload never posts
again. Each is audited: an `operator.action` event with
the operator as decider (`dashboard`), how (`dashboard`), the conversation and the
outcome. Approvals are decided through the desk's one `decide` (`_decide` here is the
only call). A stale id, or a question someone answered in Slack meanwhile, gets a
clear message and changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from multidict import MultiDictProxy

from bot.core import notices
from bot.core.messages import COORDINATOR, HUMAN, BusMessage, Outbound, Target
from bot.core.notices import SYSTEM_SPEAKER
from bot.ops.auth import CSRF_FIELD, Access, refusal, throttled_response
from bot.ops.desk import OpsView
from bot.ops.flash import Flashes
from bot.ops.html import Markup, esc, page
from bot.ops.server import Handler, Route

OPERATOR = "dashboard"
MAX_TEXT = 20_000
#: actions on the agents' memory: only the leading node has it (a decision is recorded
#: in the store and announced, so any node takes it)
LEADER_ONLY = frozenset({"answer", "stop", "new", "cancel"})


@dataclass(slots=True)
class Done:
    """What an action did: the HTTP status, the sentence shown, the audit's facts."""

    status: int
    text: str
    outcome: str
    conversation: str | None = None
    #: the audited action when it is not the form's (`approve` / `deny` of `decide`)
    action: str | None = None


Form = MultiDictProxy[str | bytes | bytearray | web.FileField]
Act = Callable[[Form], Awaitable[Done]]


class Actions:
    def __init__(self, view: OpsView, access: Access, flashes: Flashes) -> None:
        self.view = view
        self.acts = view.acts
        self.store = view.store
        self.access = access
        self.flashes = flashes

    def routes(self) -> list[Route]:
        return [
            ("POST", "/actions/answer", self._form("answer", self.answer)),
            ("POST", "/actions/decide", self._form("decide", self.decide)),
            ("POST", "/actions/stop", self._form("stop", self.stop)),
            ("POST", "/actions/new", self._form("new", self.fresh)),
            ("POST", "/actions/cancel", self._form("cancel", self.cancel)),
        ]

    def _form(self, action: str, act: Act) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            wait = self.access.throttled(request)
            if wait:
                return throttled_response(wait)
            if not self.access.allowed(request):
                return refusal(self.access, request) or _refused(
                    401, "Sign in first (SWITCHBOARD_DASHBOARD_TOKEN).", ""
                )
            form = await request.post()
            if not self.access.csrf_ok(request, form.get(CSRF_FIELD)):
                self._audit(action, Done(403, "", "refused: csrf"))
                return _refused(403, notices.CSRF_REFUSED, self.access.csrf(request))
            if action in LEADER_ONLY and self.view.node.role != "leader":
                leader = self.view.node.leader().node
                done = Done(409, notices.follower_cannot(leader), "refused: follower")
            else:
                done = await act(form)
            self._audit(done.action or action, done)
            where = self.flashes.redirect_to(_field(form, "back"), done.text, done.status < 400)
            raise web.HTTPSeeOther(where, headers={"Cache-Control": "no-store"})

        return handle

    def _audit(self, action: str, done: Done) -> None:
        self.view.events.emit(
            "operator.action", OPERATOR, action=action, decider=OPERATOR, how="dashboard",
            conversation=done.conversation, outcome=done.outcome,
        )  # fmt: skip

    # -- answer an open question -------------------------------------------------------
    async def answer(self, form: Form) -> Done:
        question = self.view.inbox.directory.questions.get(_field(form, "question"))
        if question is None:
            return Done(404, notices.QUESTION_GONE, "stale")
        if question.id in self.view.inbox.answering:
            return Done(409, notices.QUESTION_TAKEN, "already answered", question.conversation)
        text = _field(form, "text").strip()[:MAX_TEXT]
        if not text:
            return Done(400, notices.EMPTY_ANSWER, "empty", question.conversation)
        meta = {"reply_to": question.target, "sender": f"the operator ({OPERATOR})",
                "sender_id": OPERATOR, "channel": OPERATOR, "person": OPERATOR}  # fmt: skip
        with self.store.tx():
            self.acts.send(BusMessage(HUMAN, question.worker, text, "answer",
                                      question.conversation, question_id=question.id,
                                      meta=meta))  # fmt: skip
            self.acts.answering(question.id)
            self.acts.say(Outbound(SYSTEM_SPEAKER, Target.parse(question.target),
                                   notices.answered_by_operator(OPERATOR, text),
                                   question.conversation, kind="notice"))  # fmt: skip
        worker = self.view.live_workers().get(question.worker)
        name = worker.name if worker is not None else question.worker
        return Done(200, f"Answer sent to {name}.", "answered", question.conversation)

    # -- approve or deny a pending call ------------------------------------------------
    async def decide(self, form: Form) -> Done:
        approval_id = _field(form, "approval")
        approve = _field(form, "approve") == "1"
        reason = _field(form, "reason").strip()[:2000] or None
        action = "approve" if approve else "deny"
        row = self.store.approvals.get(approval_id)
        if row is None:
            return Done(404, notices.APPROVAL_GONE, "stale", action=action)
        if self._decide(approval_id, approve, reason) != "decided":
            return Done(409, notices.APPROVAL_TAKEN, "already decided", row.conversation, action)
        word = "approved" if approve else "denied"
        return Done(200, f"{row.tool} {word}.", word, row.conversation, action)

    def _decide(self, approval_id: str, approve: bool, reason: str | None) -> str:
        """The one call into the approval desk (INTERFACES.md: Approvals.decide)."""
        return self.acts.decide(
            approval_id, approve, OPERATOR, reason, decider_id=OPERATOR, how="dashboard"
        )

    # -- stop a worker -----------------------------------------------------------------
    async def stop(self, form: Form) -> Done:
        """Stop a worker; the conversation it works for reads so (through the outbox)
        and its status line there ends."""
        name = _field(form, "worker")
        row = self.view.live_workers().get(name.lower())
        if row is None:
            return Done(404, f"Nothing stopped: no active worker called {name!r}.", "stale")
        try:
            text = await self.acts.stop_worker(row.name)
        except LookupError as exc:
            return Done(404, f"Nothing stopped: {exc}.", "stale")
        work = self.view.inbox.progress.works.get(row.origin_conversation or "")
        if work is not None and work.status.startswith(f"{row.name}: "):
            self.acts.end_progress(row.origin_conversation or "")
        if row.origin_target:
            said = f"Worker {row.name} was stopped by an operator from the dashboard."
            where = Target.parse(row.origin_target)
            with self.store.tx():
                self.acts.say(
                    Outbound(SYSTEM_SPEAKER, where, said, row.origin_conversation, kind="notice")
                )
        return Done(200, text, "stopped", row.origin_conversation)

    # -- start a conversation afresh ---------------------------------------------------
    async def fresh(self, form: Form) -> Done:
        key = _field(form, "conversation")
        messages, target = self.store.agents.load_conversation(COORDINATOR, key)
        if not messages:
            return Done(404, "That conversation is empty or unknown; nothing to start afresh.",
                        "stale", key or None)  # fmt: skip
        meta = {"fresh": True, "reply_to": target, "sender": OPERATOR, "sender_id": OPERATOR}
        with self.store.tx():
            self.acts.send(BusMessage(HUMAN, COORDINATOR, "new", "human", key, meta=meta))
        return Done(200, "The conversation starts afresh; its transcript is archived.",
                    "fresh", key)  # fmt: skip

    # -- cancel a trigger ---------------------------------------------------------------
    async def cancel(self, form: Form) -> Done:
        """An operator may cancel any trigger but one of the config file (removed there)."""
        trigger_id = _field(form, "trigger")
        row = self.store.triggers.get(trigger_id)
        if row is not None and row.source == "config":
            return Done(409, f"{trigger_id} comes from the config file; remove it there.",
                        "refused: config", row.conversation)  # fmt: skip
        if not self.acts.cancel_trigger(trigger_id):
            return Done(404, f"No active trigger {trigger_id}.", "stale")
        assert row is not None
        return Done(200, f"Trigger {trigger_id} cancelled.", "cancelled", row.conversation)


def _field(form: Form, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def _refused(status: int, text: str, csrf: str) -> web.Response:
    """A post that was not taken (no session, a stale form): said on a page with the
    nav, so the way on is one click."""
    body = Markup(f'<section><p class="flash error">{esc(text)}</p><p><a href="/">Back to the '
                  "overview</a></p></section>")  # fmt: skip
    return web.Response(
        text=page("Nothing changed", body, csrf=csrf), status=status,
        content_type="text/html", headers={"Cache-Control": "no-store"},
    )  # fmt: skip
