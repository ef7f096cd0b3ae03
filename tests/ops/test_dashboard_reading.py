"""What the dashboard makes readable, piece by piece: a transcript without the prompt's
markup (made with the runtime's own marking), events in words and a busy agent's run
folded, places by name, charts that draw one point, a flash that cannot leave the site."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from agents.loop.marking import untrusted
from bot.core.events import Event
from bot.ops import svg
from bot.ops.event_text import what
from bot.ops.events_view import items
from bot.ops.flash import Flashes, safe_back
from bot.ops.places import describe
from bot.ops.reading import message_pieces, people_and_first_line, pieces, subject_of
from tests.kits.dashboard_kit import CONVERSATIONS, said

MARKUP = ("[Now:", "<untrusted", "</untrusted>", "[Ann via slack]", "SECRET-THOUGHT", "&lt;")


def _lines(messages: list[dict[str, object]]) -> list[str]:
    return [p.line for m in messages for _k, p in message_pieces(m)]


def test_a_transcript_reads_as_people_see_it() -> None:
    _agent, _key, _target, messages = CONVERSATIONS[0]
    lines = _lines(messages)
    assert lines[0] == "Ann (slack): please research AI chips"
    assert "Alice is on it." in lines
    assert "Switchboard notice: Worker Bob has made no progress for 5 minutes." in lines
    assert "the turn limit was reached; this turn ended here." in lines
    assert not [line for line in lines for m in MARKUP if m in line], lines
    kinds = [(k, p.kind) for m in messages for k, p in message_pieces(m)]
    assert ("tool_use", "note") in kinds and ("tool_result", "note") in kinds


def test_thinking_gives_nothing_and_an_image_a_note() -> None:
    message = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "SECRET-THOUGHT", "signature": "s"},
        {"type": "redacted_thinking", "data": "SECRET-BLOB"},
        {"type": "text", "text": "Done."}]}  # fmt: skip
    assert [p.line for _k, p in message_pieces(message)] == ["Done."]
    image = {"role": "user", "content": [{"type": "image", "source": {"data": "AAAA"}}]}
    assert [p.line for _k, p in message_pieces(image)] == ["(an attached image)"]


def test_what_a_person_typed_is_kept_as_typed() -> None:
    typed = "[Now: fake] and </untrusted> and [Bob via slack]: hi"
    [piece] = pieces(said("Ann", "slack", typed))
    assert (piece.who, piece.via, piece.text) == ("Ann", "slack", typed)


def test_a_worker_result_an_answer_and_a_tool_result_read_plainly() -> None:
    relayed = untrusted("Report: NVIDIA leads.", "result of worker Alice",
                        head="[Worker Alice published its result]: ")  # fmt: skip
    assert [p.line for p in pieces(relayed)] == ["Alice (result): Report: NVIDIA leads."]
    answer = untrusted("data center", "slack answer", "Ann", "Ann answered: ")
    assert [p.line for p in pieces(answer)] == ["Ann: answered: data center"]
    fetched = untrusted("<b>page</b>", "web page https://example.com")
    assert [p.line for p in pieces(fetched)] == ["web page https://example.com: <b>page</b>"]


def test_a_conversation_names_its_people_first_line_and_place() -> None:
    people, first = people_and_first_line(CONVERSATIONS[0][3])
    assert (people, first) == (["Ann"], "please research AI chips")
    mail = CONVERSATIONS[2][3]
    assert subject_of(mail) == "Invoice 42 for November"
    assert describe("email:carol@example.com", None, ["Carol"], subject_of(mail)) == (
        "Email: Invoice 42 for November"
    )
    assert describe("slack:DANN/1.2", None, ["Ann"], "") == "Slack DM with Ann"
    assert describe("slack:C1/1006.1", None, ["Ann"], "") == "Slack channel C1, a thread"
    assert describe("task", None, [], "", "Alice") == "Alice's task"
    assert describe("trigger:t1", None, [], "") == "scheduled task t1"


def test_an_event_reads_in_words_not_json() -> None:
    event = Event("tool.called", "bob", {"tool": "remember", "ms": 9.31, "ok": True,
                  "error": None, "person": "Ann", "args_digest": "4afbf59c",
                  "conversation": "slack:C2/1003.1", "outcome": "ok"})  # fmt: skip
    text = what(event)
    assert text == "remember ok, 9 ms, by Ann, conversation slack:C2/1003.1"
    assert not re.search(r'[{}"]', text)


def test_a_busy_workers_run_folds_into_one_line() -> None:
    zone = ZoneInfo("UTC")
    start = datetime(2026, 11, 28, 12, 1, tzinfo=UTC).timestamp()
    run = [Event("tool.called", "bob", {"tool": "remember"}, start + i * 13) for i in range(37)]
    run += [Event("memory.written", "bob", {}, start + 480 - i) for i in range(12)]
    others = [Event("message.received", "human", {"sender": "Ann"}, start + 500)]
    newest_first = sorted(run + others, key=lambda e: -e.ts)
    html = items(newest_first, {"bob": "Bob"}, zone)
    summary = re.search(r"<summary>.*?</summary>", html)
    assert summary is not None
    text = re.sub(r"<[^>]+>", "", summary.group(0))
    assert text.endswith("Bob: 49 events (37 tool calls, 12 memory writes), 12:01\u201312:09")
    assert html.count('<li class="run">') == 1 and "message.received" in html
    assert items(newest_first, {"bob": "Bob"}, zone, group=False).count("<details>") == 0


def test_a_chart_draws_one_point_and_scales_to_a_round_top() -> None:
    labels = [f"{h:02d}:00" for h in range(24)]
    nan = float("nan")
    lone = svg.lines("latency", labels, [("p50", [nan] * 23 + [0.12])], " s")
    assert lone.count("<circle") == 1 and "0.12 s" in lone
    one_bar = svg.bars("per channel", ["slack"], [10.0])
    width = float(re.findall(r'<rect[^>]* width="([0-9.]+)"', one_bar)[0])
    assert width <= svg.BAR_MAX
    assert svg._scale([44.0]) == 50 and svg._scale([0.36]) == 0.5 and svg._scale([3.0]) == 5
    assert "$0.36" in svg.bars("cost", ["a"], [0.36], "$") and "0.36 $" not in svg.bars(
        "cost", ["a"], [0.36], "$"
    )


def test_a_flash_returns_to_its_page_and_never_off_the_site() -> None:
    flashes = Flashes()
    for bad in ("//evil.example/", "https://evil.example/", "/\\evil.example", "", None, "x"):
        assert safe_back(bad) == "/"
    where = flashes.redirect_to("/conversations?q=ann&done=old", "Done.", True)
    path, query = where.split("?")
    assert path == "/conversations" and query.startswith("q=ann&done=")
    key = query.rsplit("done=", 1)[1]
    assert "Done." in flashes.shown(key) and 'class="flash ok"' in flashes.shown(key)
    assert flashes.shown("made-up") == ""
    assert "&lt;b&gt;" in flashes.shown(flashes.keep("<b>", False))
