"""A corrupt or unknown row in the data dir is reported, not fatal."""

from __future__ import annotations

from pathlib import Path

from bot.store.core import Store
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, events, eventually, inbound, make_settings, running_app

CORRUPT = (
    "INSERT INTO mail (recipient, payload, created_at) VALUES ('coordinator', '{not json', 0)",
    "INSERT INTO inbound (channel, message_id, conversation, payload, status, received_at)"
    """ VALUES ('terminal', 'x', 'c', '{"channel": 1}', 'pending', 0)""",
    "INSERT INTO outbox (id, target, payload, next_at, created_at)"
    """ VALUES ('o1', 'terminal', '{"agent": "a", "target": "irc:#x"}', 0, 0)""",
    "INSERT INTO questions (id, worker, question, target, refs, status, asked_at)"
    " VALUES ('q1', 'alice', '?', 'terminal', 'nope', 'open', 0)",
    "INSERT INTO workers (id, name, task, status, turns, state, created_at, updated_at)"
    " VALUES ('bob', 'Bob', 't', 'parked', 0, '{broken', 0, 0)",
)


async def test_corrupt_rows_are_quarantined_and_reported(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = make_settings(tmp_path, fake, **database_env)
    store = Store(settings.database)
    for statement in CORRUPT:
        store.execute(statement)
    store.close()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("still working?"))
        await rec.wait_count(1)
        assert app.team.workers == {}
        await eventually(lambda: len(events(tmp_path, "store.corrupt")) == 5)
    problems = [e["data"]["problem"] for e in events(tmp_path, "store.corrupt")]
    assert sorted(p.split(" row ")[0] for p in problems) == [
        "inbound",
        "mail",
        "outbox",
        "questions",
        "workers",
    ]
    store = Store(settings.database)
    sources = sorted(r[0] for r in store.execute("SELECT source FROM quarantine"))
    assert sources == ["inbound", "mail", "outbox", "questions", "workers"]
    assert store.execute("SELECT status FROM outbox WHERE id = 'o1'").fetchone()[0] == "corrupt"
    store.close()
