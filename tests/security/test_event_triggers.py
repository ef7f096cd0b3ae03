"""An `on_event` trigger sees only its own conversation and never its own posts (security
review #4, #9), with a floor on how often it fires."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from bot.core.events import Event, EventLog
from bot.core.trigger_spec import TriggerError, build_spec
from bot.store.core import Store, WorkerRow
from bot.store.trigger_rows import TriggerRow
from bot.triggers import heartbeat
from bot.triggers.watchers import EventWatch
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.security_kit import in_channel, schedule
from tests.kits.slack_kit import MENTION, posted, slack_app, slack_settings
from tests.kits.tools_kit import caller


async def test_e1_an_event_trigger_made_in_a_public_thread_sees_only_its_own_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Mallory makes an `on_event` trigger on every message in her public thread. Ann's
    DM (what she says, its key, her id) never reaches Mallory's thread; Mallory's own
    message there fires it, with the event's type and id only."""
    fake.responder = caller
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        line = schedule(type="on_event", action="FYI", action_type="send_message",
                        config={"event_pattern": "message.received"})  # fmt: skip
        ts = slack.post(f"{MENTION} {line}", user="UMAL", channel="CPUBLIC")
        await slack.until(posted("Scheduled trigger"), 20)
        slack.post("my salary is 123456", user="UANN", channel="DANN", channel_type="im")
        await slack.until(lambda s: len(in_channel(s, "DANN")) == 1, 20)
        mine = slack.post("anything new?", user="UMAL", channel="CPUBLIC", thread_ts=ts)
        await slack.until(posted("Triggered by event"), 20)
    [fyi] = [t for t in in_channel(slack, "CPUBLIC") if "Triggered by event" in t]
    assert fyi == f"FYI\n\n(Triggered by event message.received from human, id=CPUBLIC:{mine})"
    leaked = [t for t in in_channel(slack, "CPUBLIC") if re.search("DANN|UANN|123456", t)]
    assert leaked == []
    assert len(events(tmp_path, "trigger.fired")) == 1


async def test_e2_a_trigger_never_feeds_on_its_own_posts_and_fires_at_most_every_ten_seconds(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """A trigger on `message.sent` that posts: a cooldown under the floor is refused,
    and at the floor it fires once on the reply before it, never on its own post."""
    fake.responder = caller
    config = {"event_pattern": "message.sent", "cooldown_seconds": 0}
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        line = schedule(type="on_event", action="echo", action_type="send_message", config=config)
        ts = slack.post(f"{MENTION} {line}", user="UMAL", channel="CPUBLIC")
        await slack.until(posted("at least 10 seconds"), 20)
        config["cooldown_seconds"] = 10
        line = schedule(type="on_event", action="echo", action_type="send_message", config=config)
        slack.post(line, user="UMAL", channel="CPUBLIC", thread_ts=ts)
        await slack.until(posted("(Triggered by event message.sent"), 20)
        await asyncio.sleep(1.5)  # a loop would have posted dozens of times by now
    echoes = [t for t in in_channel(slack, "CPUBLIC") if t.startswith("echo")]
    assert len(echoes) == 1 and len(events(tmp_path, "trigger.fired")) == 1


async def test_e2_the_watcher_skips_a_triggers_own_posts_and_holds_the_floor() -> None:
    """The rule itself, event by event: its own tagged post never matches, another
    conversation's event is not seen, and two firings are at least 10 s apart."""
    fired: list[str] = []
    watch = EventWatch(lambda row, key, note: fired.append(note), lambda e: e.data["conversation"])
    spec = build_spec("on_event", {"event_pattern": "message.sent"}, "echo")
    row = TriggerRow("t1", spec, conversation="slack:C1/1.1")
    watch.add(row)
    here = {"conversation": "slack:C1/1.1", "id": "m1"}
    for data, at in [
        ({**here, "trigger_id": "t1"}, 1000.0),  # its own post
        ({**here, "conversation": "slack:DANN", "id": "m2"}, 1001.0),  # Ann's DM
        (here, 1002.0),  # fires
        (here, 1011.0),  # 9 s later: under the floor
        ({**here, "id": "m3"}, 1012.5),  # fires
    ]:
        watch.on_event(Event("message.sent", "coordinator", data, ts=at))
    await asyncio.sleep(0)
    assert fired == [
        "(Triggered by event message.sent from coordinator, id=m1)",
        "(Triggered by event message.sent from coordinator, id=m3)",
    ]
    with pytest.raises(TriggerError, match="at least 10 seconds"):
        build_spec("on_event", {"event_pattern": "*", "cooldown_seconds": 0}, "loop")


def test_e1_a_heartbeat_an_agent_made_looks_only_at_its_own_conversation(
    tmp_path: Path,
) -> None:
    """The same rule for a heartbeat: Mallory's sees her thread's messages, not Ann's
    DM nor the result of Ann's worker; the operator's (config) sees both."""
    database = tmp_path / "switchboard.db"
    store = Store(database)
    store.agents.upsert_worker(
        WorkerRow("alice", "Alice", "payroll", "running", "slack:DANN", None)
    )
    store.close()
    log = EventLog(tmp_path / "events.jsonl")
    log.emit("message.received", "human", conversation="slack:DANN", to=["coordinator"])
    log.emit("worker.completed", "alice", result="Top salary: ann 123456")
    log.emit("message.received", "human", conversation="slack:CPUB/1.1", to=["coordinator"])
    log.close()
    state, watch, now = {"last_run": time.time() - 60}, ["messages", "workers"], time.time() + 1
    hers = heartbeat.look(database, tmp_path / "events.jsonl", state, watch, now,
                          only="slack:CPUB/1.1")  # fmt: skip
    assert hers.changes == ["1 message(s) from people in: slack:CPUB/1.1 (1)"]
    everything = heartbeat.look(database, tmp_path / "events.jsonl", state, watch, now)
    assert "worker alice completed: Top salary: ann 123456" in everything.changes
