"""Bounded in memory (issue 33 item 2): maps keyed by agent, conversation, person or
thread keep at most their bound over a long run, and what leaves is found again (from
its files, the store, or the platform) when it is asked for."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.loop import failover
from agents.memory import OPEN_AGENTS_MAX
from agents.memory import files as memory_files
from agents.memory.prompt import PromptCache
from bot.core.events import Event, EventLog
from bot.core.messages import Target
from bot.core.trigger_spec import build_spec
from bot.inbox import people as people_mod
from bot.inbox import scope as scope_mod
from bot.inbox import watermarks as watermarks_mod
from bot.inbox.people import People
from bot.inbox.scope import FileOwners, Scope
from bot.store.core import Store
from bot.store.trigger_rows import TriggerRow
from bot.triggers.watchers import EventWatch, IdleWatch
from channels.discord import deliver
from channels.discord.threads import Threads
from channels.slack import people as slack_people
from channels.slack import progress as slack_progress
from channels.slack import reading
from channels.slack.connection import _Repeated
from channels.slack.reading import SlackReader
from config.entries import PersonConfig
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.memory_kit import memory_at
from tests.kits.session_kit import built_app, coordinator_session


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store (where the backend does not matter)."""
    store = Store(tmp_path / "switchboard.db")
    yield store
    store.close()


def test_open_agent_memories_are_bounded_and_reopen(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    coordinator = memory.agent("coordinator")
    coordinator.remember("the deploy window is Friday", "")
    first = memory.agent("w0")
    first.remember("w0 checked the build", "")
    assert "build" in first.search("build")  # its index connection is open
    for i in range(1, OPEN_AGENTS_MAX + 40):
        memory.agent(f"w{i}")
        memory.agent("coordinator")  # in use all along: never the least recently used
    assert len(memory._agents) == OPEN_AGENTS_MAX
    assert "w0" not in memory._agents and first.index._db is None  # closed when let go
    assert memory.agent("coordinator") is coordinator
    again = memory.agent("w0")
    assert again is not first and "build" in again.search("build")  # from its files
    memory.close()


def test_the_memory_prompt_cache_is_bounded(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    cache = PromptCache(max_entries=4)
    held = cache.get(memory.agent("coordinator"), None, 2_000)
    for i in range(10):
        cache.get(memory.agent(f"w{i}"), "ann", 2_000)
        assert cache.get(memory.agent("coordinator"), None, 2_000) is held  # kept: used
    assert len(cache._entries) == 4
    assert ("coordinator", None) in cache._entries and ("w0", "ann") not in cache._entries
    memory.close()


def test_scope_grants_leave_once_expired(sqlite: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    scope = Scope(People([], sqlite, "UTC"), FileOwners(sqlite), {}, EventLog(None))
    monkeypatch.setattr(scope_mod, "GRANT_TTL", -1.0)  # each grant expired at once
    for i in range(500):
        scope.grant(f"slack:C{i}", "ask_human", "slack:C1", "d")
    assert len(scope._grants) == 1
    monkeypatch.setattr(scope_mod, "GRANT_TTL", 3600.0)
    scope.grant("slack:C9", "ask_human", "slack:C1", "d")
    assert len(scope._grants) == 1 and scope.granted("slack:C9", "ask_human", "slack:C1", "d")


def test_discord_remembers_a_bounded_number_of_opened_threads(
    sqlite: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deliver, "OPENED_MAX", 50)
    poster = deliver.Poster(None, Threads(sqlite), sqlite)  # type: ignore[arg-type]
    for i in range(1, 200):
        poster._open(str(i))
    assert len(poster._opened) == 50 and poster._exists("199")
    assert "1" not in poster._opened  # its answer asks discord.py (or meets THREAD_EXISTS)


def test_the_slack_repeat_filter_is_bounded() -> None:
    quiet = _Repeated()
    lines = [logging.LogRecord("slack", logging.WARNING, "", 0, f"retry {i}", (), None)
             for i in range(_Repeated.SEEN_MAX * 3)]  # fmt: skip
    assert all(quiet.filter(line) for line in lines)  # each line new: let through
    assert len(quiet._seen) <= _Repeated.SEEN_MAX
    assert not quiet.filter(lines[-1])  # a repeat within REPEAT_SECONDS stays quiet
    later = logging.LogRecord("slack", logging.WARNING, "", 0, "retry 0", (), None)
    later.created = lines[-1].created + _Repeated.REPEAT_SECONDS + 1
    assert quiet.filter(later)


async def test_turns_on_a_fallback_are_bounded(tmp_path: Path, fake: FakeAnthropic) -> None:
    env = {"SWITCHBOARD_MODEL_FALLBACK": "claude-haiku-4-5"}
    with built_app(tmp_path / "data", fake, **env) as app:
        app.services.llm.failed_over.max = 5  # FAILED_OVER_MAX
        for i in range(12):  # conversations whose model went down and that never came back
            session, conv, *_ = coordinator_session(app, i)
            assert failover.fail_over(session, conv, "overloaded")
        moved = app.services.llm.failed_over
        assert len(moved) == 5
        assert ("coordinator", "slack:C00011") in moved
        assert ("coordinator", "slack:C00000") not in moved
        assert failover.model_for(session, conv) == "claude-haiku-4-5"  # the newest still on it


def test_people_load_a_bounded_number_of_speakers(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        store.set_kv(f"{people_mod._SPEAKER_KEY}slack:C{i:02d}", f"person{i}")
    monkeypatch.setattr(people_mod, "_SPEAKERS_MAX", 10)
    people = People([], store, "UTC")
    assert len(people._speakers) == 10
    speaker = people.speaker_of("slack:C00")  # not in memory: read from the store
    assert speaker is not None and speaker.name == "person0"
    assert len(people._speakers) == 10


class SlackUsers:
    """`users.info` as Slack answers it (the fields read: the profile's address and names)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def users_info(self, user: str) -> dict[str, Any]:
        self.asked.append(user)
        profile = {"email": f"{user.lower()}@example.com", "display_name": f"name-{user}"}
        return {"ok": True, "user": {"id": user, "name": user.lower(), "profile": profile}}


async def test_slack_user_lookups_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_people, "USERS_MAX", 5)
    client = SlackUsers()
    ann = PersonConfig(name="Ann", email=["ann@example.com"])
    links = slack_people.EmailLinks(client, People([ann], None, "UTC"))  # type: ignore[arg-type]
    for i in range(20):
        await links.prepare({"event": {"user": f"U{i}", "text": "hi"}})
    assert len(links._lookups) == 5 and len(links._emails) <= 5
    assert links.email_of("U19") == "u19@example.com" and links.email_of("U0") == ""
    reader = SlackReader(client)  # type: ignore[arg-type]
    monkeypatch.setattr(reading, "NAMES_MAX", 5)
    names = [await reader._who({"user": f"U{i}"}) for i in range(20)]
    assert names[3] == "name-U3" and len(reader.names) == 5


async def test_a_removed_trigger_leaves_nothing_in_its_watcher() -> None:
    fired: list[str] = []
    events = EventWatch(lambda row, key, note: fired.append(note), lambda e: None)
    idle = IdleWatch(lambda row, key, note: fired.append(note))
    for i in range(50):
        spec = build_spec("on_event", {"event_pattern": "message.sent"}, "echo")
        events.add(TriggerRow(f"e{i}", spec, conversation=None))
        events.on_event(Event("message.sent", "coordinator", {"id": f"m{i}"}, ts=1000.0 + i))
        quiet = build_spec("on_idle", {"watch_agent": "*", "idle_seconds": 3600}, "nudge")
        idle.add(TriggerRow(f"i{i}", quiet, conversation=None))
    await asyncio.sleep(0)
    assert fired and len(events._last_fired) == 50 and len(idle._deadline) == 50
    for i in range(50):
        events.remove(f"e{i}")
        idle.remove(f"i{i}")
    assert events._last_fired == {} and idle._deadline == {} and idle._timers == {}


class SlackStatus:
    """The Slack methods a progress line calls, answering as Slack does (`ok`)."""

    async def agents_sessions_setStatus(self, **params: Any) -> dict[str, Any]:
        return {"ok": True}

    async def reactions_add(self, **params: Any) -> dict[str, Any]:
        return {"ok": True}


async def test_slack_progress_maps_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_progress, "SHOWN_MAX", 5)
    progress = slack_progress.SlackProgress(SlackStatus(), None)  # type: ignore[arg-type]
    for i in range(20):  # people write in 20 DMs; 20 threads wait for an answer
        dm = Target("slack", f"D{i}")
        await progress.received(inbound("hi", message_id=f"D{i}:1.{i}", reply_to=dm), False)
        await progress.suspended(Target("slack", "C1", f"1.{i}"), "which colour?")
    assert len(progress._asked) == 5 and len(progress._suspended) == 5
    assert progress._asked["slack:D19"] == "1.19"


def test_memory_file_locks_leave_once_released(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    for day in range(40):  # a daily log a day, notes, facts: a lock per file while written
        memory.agent(f"w{day % 3}").remember(f"note {day}", "")
        memory.agent("coordinator").learn_fact(f"topic {day}", "a fact", False, "")
    gc.collect()
    assert len(memory_files._locks) == 0
    memory.close()


def test_catch_up_marks_held_in_memory_are_bounded_and_the_store_keeps_them(
    sqlite: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Discord thread is a place with a mark: a month of them stayed in memory."""
    monkeypatch.setattr(watermarks_mod, "MARKS_HELD", 5)
    marks = watermarks_mod.Watermarks(sqlite, "demo", int, float)
    marks.catching_up([])  # this session's catch-up is over: live messages move marks
    for n in range(12):
        marks.live(f"place{n}", str(1000 + n))
    assert len(marks._marks) == 5 and marks.get("place11") == "1011"
    assert marks.get("place0") is None  # let go of in memory
    assert len(sqlite.kv_prefixed("demo.watermark.")) == 12  # the store keeps every one
    assert marks.listening_since(0.0) == 1011.0  # the newest is held
    marks.live("place0", "2000")  # a place no longer held still moves at its next message
    assert json.loads(sqlite.get_kv("demo.watermark.place0") or "{}") == {"mark": "2000"}
    again = watermarks_mod.Watermarks(sqlite, "demo", int, float)  # a restart: the newest 5
    assert sorted(again._marks) == ["place0", "place10", "place11", "place8", "place9"]
    assert len(again.to_read(0.0, 100)) == 12  # a catch-up reads every stored place
