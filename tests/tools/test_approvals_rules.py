"""Approval rules without a running bot: which messages the router reads as an answer,
and who may decide whose call (bot/approvals/desk.py)."""

from __future__ import annotations

import re

from bot.approvals.desk import could_be_answer, parse_answer
from bot.core.messages import Sender


def test_the_routers_first_look_never_hides_an_answer() -> None:
    """`could_be_answer` skips the regexes for most messages: it must say yes to every
    text `parse_answer` reads as an answer, whatever whitespace leads it."""
    spaces = [chr(c) for c in range(0x3001) if chr(c).isspace() or re.match(r"\s", chr(c))]
    words = ["approve", "Approved!", "APPROVE.", "deny", "Denied: not now", "deny\nlater"]
    for lead in ["", *spaces, " \t\n"]:
        for word in words:
            assert parse_answer(lead + word) is not None
            assert could_be_answer(lead + word), repr(lead + word)
    for chatter in ["", "  ", "@parker note 1", "please approve", "ok", "déjà vu", "¿deny?"]:
        assert not could_be_answer(chatter) or parse_answer(chatter) is None
    assert not could_be_answer("@parker note 1") and not could_be_answer("hello")


def test_who_may_decide_across_platforms() -> None:
    """Empty SWITCHBOARD_APPROVERS: anyone but the requester (recognised on any of their
    listed ids), the terminal always; listed approvers: only they, their own call too."""
    from bot.approvals.desk import NOT_AN_APPROVER, NOT_YOUR_OWN, Decider, refusal
    from bot.inbox.people import People
    from bot.store.approvals import ApprovalRow
    from config.entries import PersonConfig

    people = People([PersonConfig(name="Ann", slack=["UANN"], email=["ann@x.org"])], None, "UTC")

    def decider(channel: str, ident: str, display: str = "") -> Decider:
        sender = Sender(ident, display or ident)
        person = people.resolve(channel, sender)
        return Decider.of(channel, sender, person.name if person.listed else None, "reply")

    row = ApprovalRow("a1", "coordinator", "slack:C1/1", "coordinator", "ops__x", {}, "t",
                      "slack:C1/1", requester="Ann", requester_id="slack:UANN")  # fmt: skip
    assert refusal([], decider("slack", "UANN"), row) == NOT_YOUR_OWN
    assert refusal([], decider("email", "ANN@x.org"), row) == NOT_YOUR_OWN  # same person
    assert refusal([], decider("slack", "UBOB", "Ann"), row) is None  # a display name is no one
    assert refusal([], decider("terminal", "ann"), row) is None
    assert refusal(["Ann"], decider("email", "ann@x.org"), row) is None  # a listed approver
    assert refusal(["UBOB"], decider("slack", "UEVE"), row) == NOT_AN_APPROVER
    unlisted = ApprovalRow("a2", "coordinator", "slack:C1/1", "coordinator", "ops__x", {}, "t",
                           "slack:C1/1", requester="UEVE", requester_id="slack:UEVE")  # fmt: skip
    assert refusal([], decider("slack", "UEVE"), unlisted) == NOT_YOUR_OWN
    assert decider("email", "ANN@x.org").platform_id == "email:ann@x.org"
