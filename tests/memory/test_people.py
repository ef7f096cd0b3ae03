"""People: one person across channels, one shared profile, their time zone in every
turn and in their reminders (issue 11), through the real app and the fake Anthropic API."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.memory.capture import captures
from bot.approvals.desk import may_decide
from bot.core.messages import Sender, Target
from bot.inbox.people import People
from bot.ledger.report import SECTIONS
from config.entries import PersonConfig
from config.settings import SettingsError, load_settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app
from tests.kits.people_kit import people_settings
from tests.kits.script import TeamScript


def said(text_: str, channel: str, sender: str, conversation: str, **kw: Any):  # type: ignore[no-untyped-def]
    return inbound(
        text_,
        conversation=conversation,
        sender=sender,
        channel=channel,
        reply_to=Target("terminal"),
        **kw,
    )


def test_people_settings_errors_are_one_line(tmp_path: Path) -> None:
    cases = [
        (
            '[[people]]\nname = "Ann"\nslack = ["U1", "U1"]\n',
            "the slack id 'U1' is listed twice (Ann)",
        ),
        (
            '[[people]]\nname = "Ann"\nemail = "a@x.org"\n'
            '[[people]]\nname = "Bo"\nemail = "A@x.org"\n',
            "the email id 'a@x.org' is listed twice (Ann and Bo)",
        ),
        (
            '[[people]]\nname = "Ann"\ntimezone = "Mars/Base"\n',
            "Ann: timezone 'Mars/Base' is not an IANA",
        ),
        ('[[people]]\nname = "../etc"\n', "config file [[people]] entry 0.name"),
    ]
    for toml, words in cases:
        path = tmp_path / "s.toml"
        path.write_text(toml)
        with pytest.raises(SettingsError) as info:
            load_settings(path, {})
        assert words in str(info.value) and "\n" not in str(info.value)


def test_allow_lists_may_name_people(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[[people]]\nname = "Ann"\nslack = "U0ANN"\nemail = "Ann@Example.com"\n')
    s = load_settings(path, {"SLACK_ALLOWED_USERS": "ann,U9", "EMAIL_ALLOWED_SENDERS": "Ann"})
    assert s.slack_allowed_users == ["U0ANN", "U9"]
    assert s.email_allowed_senders == ["ann@example.com"]
    with pytest.raises(
        SettingsError, match=r"^DISCORD_ALLOWED_USERS names Ann, who has no discord"
    ):
        load_settings(path, {"DISCORD_ALLOWED_USERS": "Ann"})


async def test_the_same_person_on_slack_and_email_shares_one_profile(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("I prefer answers in German.", "slack", "U0ANN", "slack:C1/1.0"))
        await rec.wait_count(1)
        app.human.accept(said("hello again", "email", "ANN@example.com", "email:<r1@x>"))
        await rec.wait_count(2)
        app.human.accept(said("hi", "discord", "4242", "discord:9"))
        await rec.wait_count(3)
    profile = (settings.data_dir / "people/ann.md").read_text()
    assert profile.startswith("# Ann\n\n## Preferences\n- I prefer answers in German.")
    by_email = fake.calls[1]
    assert "answers in German" in by_email.context  # the email conversation knows her
    assert "[Ann via email]: hello again" in by_email.last_text
    assert "answers in German" not in fake.calls[2].context  # Bob's turn does not
    assert "[Bob via discord]: hi" in fake.calls[2].last_text
    assert sorted(p.name for p in (settings.data_dir / "people").iterdir()) == ["ann.md"]


async def test_each_turn_carries_the_time_in_the_speakers_zone(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake, SWITCHBOARD_TIMEZONE="America/New_York")
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("hi", "slack", "U0ANN", "c1"))
        await rec.wait_count(1)
        app.human.accept(said("hi", "slack", "U0ZED", "c2"))  # not listed: the bot's zone
        await rec.wait_count(2)
        app.human.accept(said("Btw, I'm in Tokyo this week.", "slack", "U0ANN", "c1"))
        await rec.wait_count(3)
        app.human.accept(said("and now?", "slack", "U0ANN", "c1"))
        await rec.wait_count(4)
    lines = [c.blocks()[0]["text"] for c in fake.calls] + [fake.calls[3].blocks()[-2]["text"]]
    berlin = datetime.now(ZoneInfo("Europe/Berlin")).strftime("%Y-%m-%d")
    assert re.match(
        rf"\[Now: {berlin} \d\d:\d\d Europe/Berlin \(UTC\+0[12]:00, \w+day\)\]", lines[0]
    )
    assert " America/New_York (UTC-0" in fake.calls[1].blocks()[0]["text"]
    assert " Asia/Tokyo (UTC+09:00, " in lines[-1]  # stated: now her zone
    assert "Places" in (settings.data_dir / "people/ann.md").read_text()
    assert [e["data"]["zone"] for e in events(settings.data_dir, "person.timezone")] == [
        "Asia/Tokyo"
    ]
    assert len({c.body["tools"].__repr__() for c in fake.calls}) == 1


async def test_a_reminder_set_by_a_person_in_berlin_fires_at_the_berlin_time(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)  # the bot's own zone: UTC
    berlin = ZoneInfo("Europe/Berlin")
    local = (datetime.now(berlin) + timedelta(seconds=4)).replace(tzinfo=None)
    at = local.isoformat(timespec="microseconds")  # no offset: the person's wall clock

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text(f"set: {call.tool_results()[0]['content']}")]
        if "[Scheduled task]" in call.last_text:
            return [text("Stand-up now!")]
        if "remind me" in call.last_text:
            return [tool("schedule", type="at_time", config={"at": at}, action="stand-up")]
        return [text("ok")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("remind me at the stand-up", "slack", "U0ANN", "c1"))
        sent = await rec.wait_text("Stand-up now!", timeout=30)
    confirmation = next(m.text for m in sent if m.text.startswith("set:"))
    assert "without an offset are in Europe/Berlin" in confirmation
    shown = local.strftime("%Y-%m-%d %H:%M")  # her wall clock, echoed back, with UTC beside
    assert f"next run {shown}" in confirmation and " Europe/Berlin (" in confirmation
    fired = next(e for e in events(settings.data_dir, "trigger.fired"))
    due = local.replace(tzinfo=berlin).timestamp()
    assert due - 0.01 <= fired["ts"] < due + 5  # Berlin's 10:00, not UTC's (an hour off)
    woken = next(c for c in fake.calls if "[Scheduled task]" in c.last_text)
    assert woken.clock is not None and " Europe/Berlin (UTC+0" in woken.clock  # her clock


async def test_a_preference_told_to_a_worker_is_in_the_coordinators_next_prompt(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)
    script = TeamScript()
    fake.responder = script
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("please research GPUs", "slack", "U0ANN", "c1"))
        await rec.wait_kind("question")
        app.human.accept(said("Consumer. I prefer prices in euros.", "slack", "U0ANN", "c1"))
        await rec.wait_text("Report based on")
        app.human.accept(said("thanks", "email", "ann@example.com", "email:<t2@x>"))
        await rec.wait_text("coordinator heard: ")
    following = [c for c in fake.calls if c.agent == "coordinator" and "thanks" in c.last_text]
    assert "I prefer prices in euros." in following[0].context
    alice = [c for c in fake.calls if c.agent == "Alice"]
    assert "prices in euros" not in alice[0].context  # nothing known yet
    assert "I prefer prices in euros." in alice[-1].context  # workers read it too


async def test_note_about_person_and_a_profile_broken_by_hand(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)
    people = settings.data_dir / "people"
    people.mkdir(parents=True)
    broken = b"# Bob\n\xff\xfe not utf-8 \x00\n"
    (people / "bob.md").write_bytes(broken)

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text("; ".join(str(r["content"]) for r in call.tool_results()))]
        if "note it" in call.last_text:
            return [
                tool("note_about_person", person="ann", content="Ann leads the pricing work."),
                tool("note_about_person", person="U0ANN", content="Ann leads the pricing work."),
                tool("note_about_person", person="Zed", content="x"),
            ]
        return [text("ok")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("note it", "slack", "U0ANN", "c1"))
        await rec.wait_count(1)
        app.human.accept(said("I prefer short answers.", "discord", "4242", "c2"))
        await rec.wait_count(2)
    reply = rec.sent[0].text
    assert "Noted in people/ann.md" in reply and "already says that" in reply
    assert "no person called 'Zed'" in reply
    assert "Ann leads the pricing work." in (people / "ann.md").read_text()
    bob = (people / "bob.md").read_bytes()
    assert bob.startswith(broken) and b"I prefer short answers." in bob  # appended, nothing lost
    assert "not utf-8" in fake.calls[-1].context  # the turn still reads it


async def test_old_per_agent_profiles_are_migrated_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)
    for agent, line in [("coordinator", "- Likes tables"), ("alice", "- Works late")]:
        users = settings.data_dir / f"agents/{agent}/users"
        users.mkdir(parents=True)
        (users / "u0ann.md").write_text(f"# Ann\n\n## Preferences\n{line}\n")
    fake.responder = lambda call: [text("ok")]
    async with running_app(settings, [Recorder()]):
        pass
    async with running_app(settings, [Recorder()]):
        pass
    profile = (settings.data_dir / "people/ann.md").read_text()
    assert profile.count("Likes tables") == 1 and profile.count("Works late") == 1
    assert profile.count("# Ann") == 1
    assert (settings.data_dir / "agents/alice/users.migrated/u0ann.md").exists()
    assert not (settings.data_dir / "agents/alice/users").exists()
    assert len(events(settings.data_dir, "memory.profiles_migrated")) == 1


async def test_who_spoke_where_survives_a_restart(tmp_path: Path, fake: FakeAnthropic) -> None:
    settings = people_settings(tmp_path, fake)
    fake.responder = lambda call: [text("ok")]
    async with running_app(settings, [Recorder()]) as app:
        app.human.accept(said("hi", "slack", "U0ANN", "c1"))
        await eventually(lambda: bool(app.store.get_kv("people:speaker:c1")))
    async with running_app(settings, [Recorder()]) as app:
        speaker = app.human.people.speaker_of("c1")
    assert speaker is not None and (speaker.name, speaker.timezone) == ("Ann", "Europe/Berlin")


async def test_a_shared_topic_that_looks_like_a_path_is_refused(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = people_settings(tmp_path, fake)

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text(" | ".join(str(r["content"]) for r in call.tool_results()))]
        return [
            tool("learn_fact", topic="../../etc/passwd", content="x", shared=True),
            tool("learn_fact", topic="Release Train", content="Fridays at 10.", shared=True),
        ]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(said("learn it", "slack", "U0ANN", "c1"))
        (reply,) = await rec.wait_count(1)
        status = "\n".join(section(app.store) for section in SECTIONS)
    refused, stored = reply.text.split(" | ")
    assert "looks like a path" in refused
    assert stored == "Stored in team/knowledge/release-train.md, for every agent."
    assert not (settings.data_dir.parent / "etc").exists()
    assert "team-consolidate" in status and "memory-distil" in status  # switchboard status


@pytest.mark.parametrize(
    ("said_", "kind", "value"),
    [
        ("My name is Annabel.", "name", "Annabel"),
        ("ok, call me Annie!", "name", "Annie"),
        ("I'm in Berlin.", "place", "Europe/Berlin"),
        ("I am based in New York", "place", "America/New_York"),
        ("I'm in Europe/Lisbon now.", "place", "Europe/Lisbon"),
        ("We'll use Postgres 16 for billing.", "decision", ""),
        ("We agreed to ship on Thursdays.", "decision", ""),
    ],
)
def test_what_auto_capture_takes(said_: str, kind: str, value: str) -> None:
    (found,) = captures(said_)
    assert (found.kind, found.value) == (kind, value)


@pytest.mark.parametrize(
    "said_", ["I'm in a meeting.", "Are we agreed on this?", "Is my name is Ann right?", "Call me?"]
)
def test_what_auto_capture_leaves(said_: str) -> None:
    assert captures(said_) == []


def test_approvers_may_name_people_and_display_names_do_not_count() -> None:
    people = People([PersonConfig(name="Ann", slack=["U0ANN"], email=["ann@x.org"])], None, "UTC")
    approvers = ["ann", "U0BOSS"]

    def decides(channel: str, sender: Sender) -> bool:
        person = people.resolve(channel, sender)
        return may_decide(approvers, sender, person.name if person.listed else None)

    assert decides("slack", Sender("U0ANN", "whatever"))
    assert decides("email", Sender("Ann@X.org"))  # the same person by email
    assert decides("slack", Sender("U0BOSS"))  # an id still works
    assert not decides("slack", Sender("U0EVE", "Ann"))  # a display name is no identity
    assert not decides("discord", Sender("999", "ann"))
