"""What the fakes keep in a long soak (tests/fakes/kept.py): a record bounded to its
newest rows, read on from a count, and a reader that fell behind told so; the fake Slack
bounded as the soak bounds it, against the real Slack SDK."""

from __future__ import annotations

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.kept import FellBehind, Kept, newest
from tests.fakes.slack_api import FakeSlack


def test_a_record_keeps_every_row_until_a_soak_bounds_it() -> None:
    rows: Kept[int] = Kept()
    rows.extend(range(1_000))
    assert rows == list(range(1_000)) and rows.total == 1_000
    rows.keep = 3
    rows.append(1_000)
    assert rows == [998, 999, 1_000] and rows.total == 1_001


def test_a_reader_reads_on_from_its_count_and_hears_when_it_fell_behind() -> None:
    rows: Kept[int] = Kept()
    rows.keep = 3
    seen, read = [], 0
    for n in range(20):
        rows.append(n)
        if n % 2:  # reads every second row: never more than `keep` behind
            fresh, read = rows.since(read)
            seen += fresh
    assert seen == list(range(20)) and read == 20
    assert 3 <= len(rows) <= 6 and rows.dropped == 20 - len(rows)
    with pytest.raises(FellBehind, match="rows were dropped unread"):
        rows.since(0)


def test_a_map_keeps_its_newest_entries_as_a_new_dict() -> None:
    rows = {str(n): n for n in range(7)}
    assert newest(rows, None) is rows and newest(rows, 4) is rows  # not yet twice as many
    trimmed = newest(rows, 3)
    assert trimmed == {"4": 4, "5": 5, "6": 6} and len(rows) == 7


async def test_the_fake_slack_bounded_still_counts_and_reads_every_post() -> None:
    with FakeSlack() as slack:
        slack.bound(5)
        client = AsyncWebClient(token="xoxb-fake", base_url=slack.api_url)
        read, seen = 0, []
        for n in range(30):
            await client.chat_postMessage(channel="C1", text=f"answer {n}")
            if n % 4 == 3:
                fresh, read = slack.posts.since(read)
                seen += [p["text"] for p in fresh]
        fresh, read = slack.posts.since(read)
        seen += [p["text"] for p in fresh]
    assert seen == [f"answer {n}" for n in range(30)]
    assert len(slack.posts) <= 10 and slack.posts.total == 30
    assert len(slack.calls) <= 10 and slack.counted["chat.postMessage"] == 30
    assert len(slack.history["C1"]) == 30  # a channel's history keeps its newest 100
