"""The coordinator answers in the conversation a message came from, concurrently."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from agents.tools.toolbox import Tool, ToolResult, ToolSpec, schema
from bot.app import App
from bot.core.messages import Target
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, eventually, inbound, running_app


async def test_coordinator_replies_in_the_conversation(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text(f"Hello! You said: {call.last_text}")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        assert app.human.accept(inbound("hi there", sender="ann"))
        sent = await rec.wait_count(1)
    assert sent[0].agent == "coordinator"
    assert sent[0].conversation == "terminal"
    assert "[Ann via terminal]: hi there" in sent[0].text
    call = fake.calls[0]
    assert "spawn_worker" in call.tool_names and "send_message" in call.tool_names
    assert call.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert call.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_ten_people_do_not_wait_for_each_other(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: Reply([text("done")], delay=0.5)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(10):
            app.human.accept(inbound(f"question {i}", conversation=f"c{i}", sender=f"p{i}"))
        await rec.wait_count(10)
        elapsed = loop.time() - start
    # ten 0.5 s turns served one after another would take 5 s
    assert elapsed < 2.5, elapsed
    assert {m.conversation for m in rec.sent} == {f"c{i}" for i in range(10)}


async def test_prefix_is_identical_between_turns(settings: Settings, fake: FakeAnthropic) -> None:
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("one"))
        await rec.wait_count(1)
        app.human.accept(inbound("two"))
        await rec.wait_count(2)
    first, second = fake.calls
    assert first.body["system"] == second.body["system"]
    assert first.body["tools"] == second.body["tools"]
    opening = first.messages[0]["content"]
    said = {
        "type": "text",
        "text": '<untrusted source="terminal message" speaker="Ann">\n'
        "[Ann via terminal]: one\n</untrusted>",
    }
    bare = [  # the breakpoints move with the newest turns; the blocks stay as they were
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in second.messages[:2]
    ]
    assert bare == [{"role": "user", "content": [opening[0], said]}, bare[1]]
    # each turn carries the date and time (SWITCHBOARD_TIMEZONE, UTC here), not the prompt
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    for call in (first, second):
        now = call.blocks()[0]["text"]
        assert re.fullmatch(rf"\[Now: {today} \d\d:\d\d UTC \(UTC\+00:00, \w+day\)\]", now), now
        assert today not in call.system


async def test_duplicate_inbound_is_handled_once(settings: Settings, fake: FakeAnthropic) -> None:
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        assert app.human.accept(inbound("hello", message_id="same"))
        assert not app.human.accept(inbound("hello", message_id="same"))
        await rec.wait_count(1)
        await asyncio.sleep(0.2)
    assert len(fake.calls) == 1 and len(rec.sent) == 1


async def test_529_storm_delays_but_loses_nothing(settings: Settings, fake: FakeAnthropic) -> None:
    fake.fail(529, times=9)  # the SDK retries twice per call: three of our attempts fail
    fake.responder = lambda call: [text("finally")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("are you there?"))
        await rec.wait_for(lambda sent: any(m.text == "finally" for m in sent), timeout=30)
    notices = [m for m in rec.sent if m.kind == "notice"]
    assert len(notices) == 1 and "unavailable" in notices[0].text
    assert [m.text for m in rec.sent if m.agent == "coordinator"] == ["finally"]


async def test_reply_goes_to_the_conversation_target(
    settings: Settings, fake: FakeAnthropic
) -> None:
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("hi", conversation="terminal:x", reply_to=Target("terminal")))
        sent = await rec.wait_count(1)
    assert sent[0].target == Target("terminal") and sent[0].conversation == "terminal:x"


async def test_a_call_that_would_park_or_end_the_coordinator_is_refused(
    settings: Settings, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    """The coordinator's role has no task: a tool (here an extension's, by mistake) that
    parks or ends one gets a refusal the model reads, the turn goes on, and it is logged."""
    wait = ToolSpec("wait_for_ann", "Wait for Ann.", schema({}))
    done = ToolSpec("finish", "Finish.", schema({}))

    async def parks(args: dict[str, Any]) -> ToolResult:
        return ToolResult("", park="q1")

    async def ends(args: dict[str, Any]) -> ToolResult:
        return ToolResult("over", end=True)

    def extend(app: App) -> None:
        app.services.tool_factories.append(lambda info: [Tool(wait, parks), Tool(done, ends)])

    def responder(call: Call) -> list[dict[str, Any]]:
        if not call.tool_results():
            return [tool("wait_for_ann"), tool("finish")]
        return [text("Could not wait; done.")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec], [extend]) as app:
        app.human.accept(inbound("wait for Ann"))
        await rec.wait_text("Could not wait; done.")
        await eventually(lambda: not app.coordinator.sessions)
    results = fake.calls[1].tool_results()
    assert [r["is_error"] for r in results] == [True, True]
    assert all(r["content"].startswith("Refused: ") for r in results)
    assert "would park or end a task" in caplog.text
    assert not any(m.kind == "notice" for m in rec.sent)  # no failed session


async def test_a_turn_reads_its_prompt_snapshot_from_the_store_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def answer(call: Call) -> list[dict[str, Any]]:
        if "tool" in call.last_text and not call.tool_results():
            return [tool("list_workers")]
        return [text("ok")]

    fake.responder = answer
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("hello"))
        await rec.wait_count(1)
        store, reads = app.services.store, []
        get = store.get_kv
        store.get_kv = lambda key: (key.startswith("prompt:") and reads.append(key)) or get(key)  # type: ignore[method-assign]
        app.human.accept(inbound("a tool please"))
        await rec.wait_count(2)
    assert len(fake.calls) == 3  # the second turn called the model twice: the tool, the answer
    assert (
        fake.calls[1].body["system"] == fake.calls[2].body["system"] == fake.calls[0].body["system"]
    )
    assert len(reads) == 1, reads  # not once more for each call and for the turn's context
