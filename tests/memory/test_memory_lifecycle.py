"""The amnesia test (a real process restart) and the correction test (60+ turns,
compaction after a memory flush), per reference 003, against the fake Anthropic API."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents.memory.compaction import FLUSH, SUMMARISE, estimate_tokens
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.memory_kit import assert_tool_pairs_valid
from tests.kits.proc import chat


def test_amnesia_a_fact_survives_a_kill_and_is_in_the_next_request(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    def responder(call: Call) -> list[dict]:
        if call.tool_results():
            return [text("Noted.")]
        if "favourite editor is Helix" in call.last_text:
            return [tool("remember", content="Ann's favourite editor is Helix.")]
        if "which editor" in call.last_text:
            return [text("The one in my memory.")]
        return [text("ok")]

    fake.responder = responder
    first = chat(tmp_path, fake.env())
    try:
        first.expect("you are talking to the coordinator")
        first.send("My favourite editor is Helix.")  # stored by the model's tool call
        first.expect("[coordinator] Noted.")
        first.send("Remember that the release train leaves on Fridays.")  # auto-captured
        first.expect("[coordinator] ok")
    finally:
        first.kill()  # SIGKILL: no clean shutdown

    before = len(fake.calls)
    second = chat(tmp_path, fake.env())
    try:
        second.expect("you are talking to the coordinator")
        second.send("which editor do I use?")
        second.expect("[coordinator] The one in my memory.")
    finally:
        second.quit()
    very_next = fake.calls[before]
    assert "which editor do I use?" in very_next.last_text
    known = very_next.system + very_next.context  # the prompt, and this turn's context
    assert "Ann's favourite editor is Helix." in known
    assert "the release train leaves on Fridays" in known


def flush_reply(call: Call) -> list[dict]:
    """The model during a flush turn: store the API key it finds in the conversation
    (the flush may follow a tool result of the interrupted turn: not a sign it is done)."""
    if "Ann's API key is" in call.all_text:  # stored in this flush already
        return [text("DONE")]
    found = re.search(r"My API key is (\d+)", call.all_text)
    if found:
        return [tool("remember", content=f"Ann's API key is {found.group(1)}.")]
    return [text("DONE")]


def chat_reply(call: Call) -> list[dict]:
    last = call.last_text
    if "what is my API key" in last:
        return [tool("memory_search", query="API key")]
    if call.tool_results():
        key = re.search(r"API key is (\d+)", last)
        return [text(f"Your API key is {key.group(1)}." if key else "Done.")]
    turn = re.search(r"status update (\d+)", last)
    if turn and int(turn.group(1)) % 5 == 0:  # tool calls in the history to cut around
        return [tool("recall", days=1)]
    return [text("Understood, thanks. " + "Acknowledged in detail. " * 8)]


#: the fixed prefix (system + tools, about 2,600 tokens) plus room for a few turns
COMPACT_AT = 4000


async def test_correction_fact_found_after_60_turns_and_compaction(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(
        tmp_path / "data",
        fake,
        SWITCHBOARD_COMPACT_AT_TOKENS=str(COMPACT_AT),
        SWITCHBOARD_COMPACT_KEEP_TOKENS="700",
    )

    def responder(call: Call) -> list[dict]:
        if call.system == SUMMARISE:
            return [text(f"Ann sent routine status updates ({len(call.last_text)} chars).")]
        if FLUSH in call.all_text:
            return flush_reply(call)
        return chat_reply(call)

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("My API key is 12345, by the way."))
        await rec.wait_count(1)
        for n in range(1, 62):
            app.human.accept(inbound(f"status update {n}: " + "all systems nominal. " * 6))
            await rec.wait_count(n + 1)
        app.human.accept(inbound("what is my API key?"))
        await rec.wait_count(63)

    assert rec.texts()[-1] == "Your API key is 12345."
    search = fake.calls[-1].tool_results()[0]["content"]
    assert "Ann's API key is 12345." in search
    kinds = [e["type"] for e in events(settings.data_dir, "memory.")]
    assert kinds.count("memory.compacted") >= 2
    assert kinds.index("memory.flushed") < kinds.index("memory.compacted")
    assert kinds.index("memory.written") < kinds.index("memory.compacted")  # the flush stored it
    first_flush = next(i for i, c in enumerate(fake.calls) if FLUSH in c.all_text)
    first_summary = next(i for i, c in enumerate(fake.calls) if c.system == SUMMARISE)
    assert first_flush < first_summary
    summaries = [c for c in fake.calls if c.system == SUMMARISE]
    assert all("12345" not in c.system for c in summaries)
    chat = [c for c in fake.calls if c.system != SUMMARISE and FLUSH not in c.all_text]
    asking = next(c for c in chat if "what is my API key" in c.last_text)
    assert "My API key is 12345" not in json.dumps(asking.messages)  # compacted away
    assert max(len(c.messages) for c in chat) < 60  # 126+ messages without compaction
    assert max(len(json.dumps(c.body)) // 4 for c in chat) < COMPACT_AT + 500
    assert_tool_pairs_valid(fake.calls)
    archives = sorted((settings.data_dir / "agents/coordinator/archive").glob("terminal-*.jsonl"))
    assert len(archives) == kinds.count("memory.compacted")
    assert "My API key is 12345" in archives[0].read_text()  # archived, never deleted


def test_the_token_estimate_follows_the_tools_it_is_given() -> None:
    """The tool list's size is remembered per list (a toolbox keeps one until its tools
    change), never reused for another list or for the same list grown."""
    spec = {"name": "t", "description": "d" * 400, "input_schema": {"type": "object"}}
    tools: list[dict[str, Any]] = [spec]
    one = estimate_tokens("", tools, [])
    assert estimate_tokens("", tools, []) == one
    assert estimate_tokens("", [spec, dict(spec, name="u")], []) > one
    tools.append(dict(spec, name="v"))
    assert estimate_tokens("", tools, []) > one
    assert estimate_tokens("", [], []) < one
