"""A conversation stored one message a row (bot/store/agents.py), on both backends: a
checkpoint writes what is new or changed, never the transcript again; whatever changed
(a compaction, a repair, a shorter history) reads back exactly as saved; a conversation's
rows go with it; and a database whose conversations were stored whole (schema version 7)
is moved over at start, its transcripts intact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.store.core import Store
from bot.store.errors import StoreError
from config.settings import Database
from tests.kits.store_kit import at_version

C = "coordinator"


def said(n: int, word: str = "turn") -> list[dict[str, Any]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": [{"type": "text", "text": f"{word} {i}"}]}
            for i in range(n)]  # fmt: skip


@pytest.fixture
def written(store: Store) -> Iterator[list[tuple[int, ...]]]:
    """The seq of each message row every INSERT into conversation_messages carried."""
    seqs: list[tuple[int, ...]] = []
    execute = store.execute

    def spy(sql: str, args: tuple[Any, ...] = ()) -> Any:
        if sql.startswith("INSERT INTO conversation_messages"):
            seqs.append(tuple(args[2::5]))
        return execute(sql, args)

    store.execute = spy  # type: ignore[method-assign]
    yield seqs


def rows(store: Store, key: str) -> int:
    return int(store.execute(
        "SELECT COUNT(*) FROM conversation_messages WHERE agent = ? AND key = ?", (C, key)
    ).fetchone()[0])  # fmt: skip


def test_a_checkpoint_writes_only_the_messages_it_added(
    store: Store, written: list[tuple[int, ...]]
) -> None:
    messages = said(3)
    store.agents.save_conversation(C, "slack:C1/1.0", messages, "slack:C1/1.0")
    for n in (4, 5, 7):
        messages = said(n)
        with store.tx():
            store.agents.save_conversation(C, "slack:C1/1.0", messages, None)
    store.agents.save_conversation(C, "slack:C1/1.0", messages, None)  # nothing new
    assert written == [(0, 1, 2), (3,), (4,), (5, 6)]
    assert store.agents.load_conversation(C, "slack:C1/1.0") == (messages, "slack:C1/1.0")
    assert rows(store, "slack:C1/1.0") == 7


def test_what_changed_is_rewritten_from_where_it_changed(
    store: Store, written: list[tuple[int, ...]]
) -> None:
    store.agents.save_conversation(C, "k", said(6), "terminal")
    held = said(6)
    held[5]["content"][0]["text"] = "turn 5, whole now"  # the last answer, completed in place
    store.agents.save_conversation(C, "k", held, None)
    compacted = [{"role": "user", "content": "[summary of turns 0-3]"}, *held[4:]]
    store.agents.save_conversation(C, "k", compacted, None)
    assert written == [(0, 1, 2, 3, 4, 5), (5,), (0, 1, 2)]
    assert store.agents.load_conversation(C, "k") == (compacted, "terminal")
    assert rows(store, "k") == 3
    store.agents.save_conversation(C, "k", compacted[:1], None)  # shorter: the tail goes
    assert store.agents.load_conversation(C, "k") == (compacted[:1], "terminal")
    store.agents.save_conversation(C, "k", [], None)  # started afresh (agents/team/fresh.py)
    assert store.agents.load_conversation(C, "k") == ([], "terminal")
    assert rows(store, "k") == 0


def test_a_long_transcript_is_written_in_a_few_statements(
    store: Store, written: list[tuple[int, ...]]
) -> None:
    store.agents.save_conversation(C, "k", said(250), None)
    assert [len(w) for w in written] == [100, 100, 50]
    assert store.agents.load_conversation(C, "k")[0] == said(250)


def test_a_conversations_rows_go_with_it(store: Store) -> None:
    store.agents.save_conversation(C, "gone", said(4), None)
    store.agents.save_conversation(C, "kept", said(2), None)
    store.execute("DELETE FROM conversations WHERE key = 'gone'")  # as the pruning does
    assert (rows(store, "gone"), rows(store, "kept")) == (0, 2)
    assert store.agents.load_conversation(C, "gone") == ([], None)


def test_the_readers_of_every_conversation_see_the_rows(store: Store) -> None:
    asked = said(3)  # ends with the user's message: the model owes an answer
    store.agents.save_conversation(C, "asked", asked, None)
    store.agents.save_conversation(C, "answered", said(2), None)
    cut = [*said(1), {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "remember", "input": {}}]}]  # fmt: skip
    store.agents.save_conversation(C, "cut", cut, None)
    assert sorted(store.agents.unfinished_conversations(C)) == ["asked", "cut"]
    since = {(a, k): m for a, k, m in store.agents.conversations_since(0)}
    assert since == {(C, "asked"): asked, (C, "answered"): said(2), (C, "cut"): cut}
    sizes = {i.key: i.size for i in store.views.conversations_page(0, 10)}
    assert sizes["answered"] == sum(len(json.dumps(m)) for m in said(2))


def test_a_corrupt_message_starts_its_conversation_afresh(store: Store) -> None:
    store.agents.save_conversation(C, "k", said(3), "terminal")
    store.agents.save_conversation(C, "ok", said(2), None)
    store.execute("UPDATE conversation_messages SET message = '{not json' WHERE seq = 1"
                  " AND key = 'k'")  # fmt: skip
    assert store.agents.load_conversation(C, "k") == ([], "terminal")
    assert [k for _, k, _ in store.agents.conversations_since(0)] == ["ok"]
    # started afresh with the same first messages: the broken row is not kept for its
    # fingerprint (it was the fingerprint of the bytes before they broke)
    store.agents.save_conversation(C, "k", said(3), None)
    assert store.agents.load_conversation(C, "k") == (said(3), "terminal")


THOUGHT = [{"role": "assistant", "content": [
    {"type": "thinking", "thinking": "é ☃", "signature": "sig=="},
    {"type": "text", "text": "done"}]}]  # fmt: skip
#: transcripts stored whole, as schema version 7 kept them: one each kind of row
WHOLE = {
    "a": json.dumps(said(3)),
    "thought": json.dumps(THOUGHT),
    "empty": "[]",
    "corrupt": "[{not json",
    "not a list": '{"role": "user"}',
}


def version_7(database: Database) -> None:
    """A database at schema version 7 holding the WHOLE transcripts."""
    insert = "INSERT INTO conversations (agent, key, target, messages, updated_at) VALUES "
    rows = [(insert + "(?, ?, ?, ?, 1.0)", (C, key, f"t:{key}", raw)) for key, raw in WHOLE.items()]
    at_version(database, 7, rows)


def test_transcripts_stored_whole_are_moved_to_rows_at_start(database: Database) -> None:
    version_7(database)
    store = Store(database)
    try:
        loaded = {k: store.agents.load_conversation(C, k) for k in WHOLE}
        assert loaded == {
            "a": (said(3), "t:a"), "thought": (THOUGHT, "t:thought"),
            "empty": ([], "t:empty"), "corrupt": ([], "t:corrupt"),
            "not a list": ([], "t:not a list"),
        }  # fmt: skip
        # the moved rows carry no fingerprint: the first save writes them once more
        store.agents.save_conversation(C, "a", [*said(3), *said(1, "more")], None)
        assert rows(store, "a") == 4
        assert store.agents.load_conversation(C, "a")[0] == [*said(3), *said(1, "more")]
        with pytest.raises(StoreError):  # the whole transcripts' column is gone
            store.execute("SELECT messages FROM conversations")
    finally:
        store.close()
