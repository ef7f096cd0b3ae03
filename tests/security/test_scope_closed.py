"""Scope never fails open (security review #8, #13): evicting a conversation's known speaker
makes it the most restricted, and an approved ask_human grants that call alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.core.events import EventLog
from bot.core.messages import Target
from bot.core.redact import args_digest
from bot.inbox.people import People
from bot.inbox.scope import FileOwners, Scope
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.security_kit import in_channel, schedule
from tests.kits.slack_kit import MENTION, posted, slack_app, slack_settings
from tests.kits.tools_kit import caller


# -- finding 8: scope never fails open --------------------------------------------------
async def test_f1_ten_thousand_cheap_messages_do_not_make_a_trigger_the_operators(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Mallory's thread schedules `read_activity` for later, then 10,000 other
    conversations speak (what 10,000 `@zz` messages do) and push her out of memory. When
    it fires, she is still who asks: reading every conversation waits for an approver."""
    fake.responder = caller
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        task = schedule(type="delayed", config={"delay_seconds": 2},
                        action='call read_activity {"since": "24h"}')  # fmt: skip
        slack.post(f"{MENTION} {task}", user="UMAL", channel="CPUBLIC")
        await slack.until(posted("Scheduled trigger"), 20)
        people = app.human.people
        with app.store.tx():
            for n in range(10_000):
                people.spoke(f"slack:CSPAM/{n}.1", "UMAL", "slack:UMAL")
        await slack.until(posted("Approval needed"), 30)
    assert not any("Activity" in t for t in in_channel(slack, "CPUBLIC"))
    crossed = [(e["data"]["tool"], e["data"]["person_id"]) for e in events(tmp_path,
               "scope.crossed")]  # fmt: skip
    assert crossed == [("read_activity", "slack:UMAL")]


def test_f1_a_conversation_whose_person_is_unknown_is_the_most_restricted() -> None:
    """Whoever asks where nobody is known is nobody: a place open only to the
    operator's own work is not open to them, as it is to a config trigger's turn."""
    scope = Scope(
        People([], None, "UTC"), FileOwners(None), {"slack": object()},  # type: ignore[arg-type]
        EventLog(None), open_targets=["slack:CHOME"],
    )  # fmt: skip
    home = Target.parse("slack:CHOME")
    nobody = scope.asker("slack:CPUBLIC/1.1")
    operator = scope.asker("trigger:t1")
    assert (nobody.person, nobody.operator, operator.operator) == (None, False, True)
    assert asyncio.run(scope.read(operator, home, None)) is None
    crossing = asyncio.run(scope.read(nobody, home, Target.parse("slack:CPUBLIC/1.1")))
    assert crossing is not None and "nobody in this conversation" in crossing.why


# -- finding 13: an approval of ask_human(via=X) is no read grant for X ----------------
def test_g1_an_approved_ask_human_grants_that_call_alone() -> None:
    scope = Scope(People([], None, "UTC"), FileOwners(None), {}, EventLog(None))  # type: ignore[arg-type]
    question = {"question": "OK?", "via": "slack:CSECRET"}
    scope.grant("slack:C1/1.1", "ask_human", "slack:CSECRET", args_digest(question))
    assert scope.granted("slack:C1/1.1", "ask_human", "slack:CSECRET", args_digest(question))
    read = {"target": "slack:CSECRET"}
    assert not scope.granted("slack:C1/1.1", "read_channel", "slack:CSECRET", args_digest(read))
    other = {**question, "question": "and the salaries?"}
    assert not scope.granted("slack:C1/1.1", "ask_human", "slack:CSECRET", args_digest(other))
