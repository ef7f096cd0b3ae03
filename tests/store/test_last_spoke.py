"""`people:last:<id>` (bot/inbox/last_spoke.py): one store write a minute for a busy
person, never a stale answer to catchup, a bounded memory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.messages import Outbound, Target
from bot.inbox import last_spoke
from bot.inbox.last_spoke import STEP, LastSpoke
from bot.inbox.people import People
from bot.ledger.catchup import catchup
from bot.store.core import Store
from config.settings import Settings
from tests.kits.app_kit import running_app

ANN = "slack:UANN"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "switchboard.db")
    yield s
    s.close()


def writes(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    real = store.set_kv

    def spy(key: str, value: str) -> None:
        if key.startswith(last_spoke.KEY):
            seen.append((key, value))
        real(key, value)

    monkeypatch.setattr(store, "set_kv", spy)
    return seen


def test_a_hundred_messages_in_a_minute_write_the_mark_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = writes(store, monkeypatch)
    people, clock = People([], store, "UTC"), Clock()
    people.last.clock = clock
    start = clock.now
    for _ in range(100):
        people.spoke("slack:D1", "UANN", ANN)
        clock.now += 0.5  # 100 messages in 50 seconds
    assert seen == [(last_spoke.KEY + ANN, repr(start))]
    # the reader still sees the newest message, not the stored mark
    assert people.last_spoke({ANN}) == start + 49.5
    assert people.speakers() == {ANN: start + 49.5}
    clock.now = start + STEP
    people.spoke("slack:D1", "UANN", ANN)  # a minute on: written again
    assert seen[-1] == (last_spoke.KEY + ANN, repr(start + STEP)) and len(seen) == 2


def test_catchup_after_a_restart_hides_nothing(store: Store) -> None:
    clock = Clock()
    clock.now = time.time() - 20  # the outbox's own clock is the real one
    people = People([], store, "UTC")
    people.last.clock = clock
    people.spoke("slack:D1", "UANN", ANN)
    store.enqueue(Outbound("coordinator", Target.parse("slack:D1"), "seen", "slack:D1"))
    for seq, _ in store.new_outbox_rows(0, 10):
        store.outbox_sent(seq, {})
    clock.now += 40
    people.spoke("slack:D1", "UANN", ANN)  # 40 s later, after the answer: not written
    mine = people.conversations_of({ANN})
    assert catchup(store, mine, people.last_spoke({ANN}), {}).items == []
    # a new process knows the mark of 30 s before: the answer shows again, never hidden
    again = People([], store, "UTC")
    since = again.last_spoke({ANN})
    assert since == clock.now - 40
    assert [i.text for i in catchup(store, mine, since, {}).items] == ["seen"]


def test_the_memory_is_bounded_and_an_evicted_time_is_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(last_spoke, "MAX_HELD", 3)
    clock = Clock()
    last = LastSpoke(store, clock)
    last.spoke("slack:U0")
    clock.now += 10
    last.spoke("slack:U0")  # held at +10, stored at +0
    for n in range(1, 4):
        last.spoke(f"slack:U{n}")
    assert len(last._held) == 3 and "slack:U0" not in last._held
    assert store.get_kv(last_spoke.KEY + "slack:U0") == repr(clock.now)  # its exact time
    assert last.last({"slack:U0", "slack:U3"}) == clock.now


def test_a_clean_stop_writes_the_exact_times(store: Store) -> None:
    clock = Clock()
    last = LastSpoke(store, clock)
    last.spoke(ANN)
    clock.now += 20
    last.spoke(ANN)
    last.spoke("slack:UBOB")
    assert store.get_kv(last_spoke.KEY + ANN) == repr(clock.now - 20)
    last.flush()
    assert LastSpoke(store).last({ANN}) == clock.now  # what a new process reads
    assert LastSpoke(store).last({"slack:UBOB"}) == clock.now


async def test_the_app_writes_the_exact_time_when_it_stops(settings: Settings) -> None:
    clock = Clock()
    async with running_app(settings) as app:
        app.human.people.last.clock = clock
        app.human.people.spoke("terminal", "ann", "terminal:ann")
        clock.now += 30
        app.human.people.spoke("terminal", "ann", "terminal:ann")  # not written yet
    store = Store(settings.data_dir / "switchboard.db")
    try:
        assert store.get_kv(last_spoke.KEY + "terminal:ann") == repr(clock.now)
    finally:
        store.close()
