"""The agents on today's thinking models, end to end against the fake Anthropic API as
those models behave (tests/fakes/anthropic_api.py: signed thinking that must come back
unchanged within a tool-use cycle, the settings each model refuses): the coordinator's
and a worker's tool loops, a restart in the middle of a cycle, a declined question and
the next one, a large `max_tokens`, Claude Sonnet 5.5, a model the map does not know,
and what the model may send that the runtime must survive. Any request the real API
would refuse fails the test (the `fake` fixture)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.ops.transcript_view import _message
from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, redacted, text, thinking, tool
from tests.fakes.anthropic_models import MODELS
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import Recorder, events, eventually, inbound, make_settings, running_app
from tests.kits.slack_kit import (
    MENTION,
    posted,
    slack_app,
    slack_settings,
    texts,
)

SECRET = "SECRET-PLAN-7731"  # thinking text: must never reach a person, a page or a log
#: a model whose thinking comes back with its text (display `summarized`), so a leak shows
SUMMARIZED = "claude-opus-4-6"


def noting(call: Call) -> Reply | list[dict[str, Any]]:
    """The coordinator notes what it is told, beside a `remember` call, then is quiet."""
    if habit.after_tool_result(call):
        return habit.empty()
    return [thinking(SECRET), text("Noted."), tool("remember", content=call.last_text[-40:])]


def thought_blocks(call: Call) -> list[dict[str, Any]]:
    return [
        b
        for m in call.messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]


async def test_a_coordinator_tool_loop_on_sonnet_5_sends_its_thinking_back(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = noting
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} I drink tea", channel="C1")
        await slack.until(posted("Noted."))
        await eventually(lambda: len(fake.calls) == 2)
    first, second = fake.calls
    assert first.body["thinking"] == {"type": "adaptive"}  # the coordinator answers quickly
    assert first.body["output_config"] == {"effort": "low"} and first.body["stream"]
    assert thought_blocks(second)  # the tool-use cycle's thinking came back (else a 400)
    assert second.messages[1]["content"][0]["type"] == "thinking"
    assert texts(slack) == ["*coordinator:* Noted."]


async def test_thinking_never_reaches_a_person_a_log_a_page_or_an_archive(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake.responder = noting
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_MODEL=SUMMARIZED)
    with caplog.at_level(logging.INFO):  # the SDK logs whole requests at DEBUG
        async with slack_app(settings) as (app, _):
            thoughts = []  # the second answer is read after the fake has seen its request
            app.events.subscribe(lambda e: thoughts.append(e) if e.type == "llm.thought" else 0)
            ts = slack.post(f"{MENTION} I drink tea", channel="C1")
            await slack.until(posted("Noted."))
            await eventually(lambda: len(fake.calls) == 2 and len(thoughts) == 2)
            assert SECRET in json.dumps(thought_blocks(fake.calls[1]))  # the model's, kept
            messages, _ = app.store.agents.load_conversation("coordinator", "slack:C1/" + ts)
    assert SECRET not in json.dumps(slack.posts)
    assert SECRET not in caplog.text
    assert SECRET not in (settings.data_dir / "events.jsonl").read_text()
    assert [e["data"]["blocks"] for e in events(settings.data_dir, "llm.thought")] == [1, 1]
    assert SECRET not in _message("coordinator", messages[1])  # the dashboard's transcript


async def test_a_worker_tool_loop_and_a_restart_in_its_cycle_keep_the_thinking(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """Alice thinks and asks a person: she parks inside a tool-use cycle. The app stops
    and starts again; the answer wakes her, and her request carries that cycle's
    thinking from the store (the fake refuses it dropped or changed)."""

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent == "coordinator":
            if "published its result" in call.last_text:
                return [text("Alice: done.")]
            if habit.after_tool_result(call):
                return habit.empty()
            return [tool("spawn_worker", name="Alice", task="Pick a GPU vendor.")]
        if "answered" in call.last_text:
            return [thinking("the person chose"), tool("publish", result="Vendor B.")]
        return [thinking("need a decision"), tool("ask_human", question="Budget or speed?")]

    fake.responder = respond
    settings = make_settings(tmp_path / "data", fake)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("pick a GPU vendor", conversation="c1"))
        await rec.wait_text("Budget or speed?")
    asked = [c for c in fake.calls if c.agent == "Alice"][-1]
    assert asked.body["output_config"] == {"effort": "medium"}  # workers think deeper
    rec2 = Recorder()
    async with running_app(settings, [rec2]) as app:
        assert app.store.agents.workers()[0].status == "parked"
        app.human.accept(inbound("speed", conversation="c1"))
        await rec2.wait_text("Alice: done.")
    resumed = [c for c in fake.calls if c.agent == "Alice"][-1]
    assert resumed.tool_results()
    cycle = resumed.messages[-2]  # the assistant turn the answer's tool_result belongs to
    assert cycle["role"] == "assistant" and cycle["content"][0]["type"] == "thinking"


async def test_a_declined_question_leaves_the_context_and_the_next_is_answered(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Exploit help."}

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if "exploit" in call.last_text:
            return Reply([text("Here is how")], stop_reason="refusal", stop_details=details)
        return [text("Patch with 2.4.1.")]

    fake.responder = respond
    rec = Recorder()
    async with running_app(make_settings(tmp_path / "data", fake), [rec]) as app:
        app.human.accept(inbound("how would someone exploit CVE-2026-1234?"))
        await rec.wait_text("declined")
        app.human.accept(inbound("ok then: how do we patch it?"))
        await rec.wait_text("Patch with 2.4.1.")
    assert rec.texts() == [
        "The model declined to answer that. It said: Exploit help. I took it out of this "
        "conversation, so you can rephrase it or ask something else.",
        "Patch with 2.4.1.",
    ]
    after = fake.calls[-1].all_text
    assert "exploit CVE" not in after and "Here is how" not in after  # reset, as asked
    assert "declined by the model" in after  # a note says a message was taken out


async def test_a_large_max_tokens_works_for_every_call(tmp_path: Path, fake: FakeAnthropic) -> None:
    """The SDK refuses a non-streamed request over ~21,333 tokens; every call streams."""

    def respond(call: Call) -> list[dict[str, Any]]:
        if call.agent != "coordinator":
            return [tool("publish", result="done")]
        if "published its result" in call.last_text:
            return [text("Alice says: done")]
        if habit.after_tool_result(call):
            return []
        return [tool("spawn_worker", name="Alice", task="Do it.")]

    fake.responder = respond
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MAX_TOKENS="64000")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("go"))
        await rec.wait_text("Alice says: done")
    assert {c.body["max_tokens"] for c in fake.calls} == {64_000}
    assert all(c.body["stream"] for c in fake.calls)


async def test_sonnet_5_5_is_spoken_to_as_it_wants(tmp_path: Path, fake: FakeAnthropic) -> None:
    """It refuses `thinking: disabled` (off is `between_tools`) and returns the text it
    writes between tool calls as thinking: that is not shown; the answer is."""

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.after_tool_result(call):
            return [text("Saved your preference.")]
        return [text("Let me note that."), tool("remember", content="tea")]

    fake.responder = respond
    settings = make_settings(
        tmp_path / "data", fake, SWITCHBOARD_MODEL="claude-sonnet-5-5", SWITCHBOARD_EFFORT="off"
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("I drink tea"))
        await rec.wait_text("Saved your preference.")
    assert fake.calls[0].body["thinking"] == {"type": "between_tools"}
    assert rec.texts() == ["Saved your preference."]
    assert fake.calls[1].messages[1]["content"][0]["type"] == "thinking"


async def test_a_model_the_map_does_not_know_is_asked_for_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.models["claude-nova-1"] = MODELS["claude-sonnet-5"]
    fake.responder = lambda call: [text(f"hi {len(fake.calls)}")]
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MODEL="claude-nova-1")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("one"))
        await rec.wait_text("hi 1")
        app.human.accept(inbound("two"))
        await rec.wait_text("hi 2")
    assert fake.lookups == ["claude-nova-1"]
    assert fake.calls[0].body["output_config"] == {"effort": "low"}


async def test_a_model_nobody_describes_is_sent_no_thinking_setting(
    tmp_path: Path, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    fake.responder = lambda call: [text("hello")]
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MODEL="claude-local-7b")
    rec = Recorder()
    with caplog.at_level(logging.WARNING):
        async with running_app(settings, [rec]) as app:
            app.human.accept(inbound("hi"))
            await rec.wait_text("hello")
    assert "thinking" not in fake.calls[0].body and "output_config" not in fake.calls[0].body
    assert "not in Switchboard's capability map" in caplog.text


async def test_an_older_model_without_thinking_runs_as_before(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = noting
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MODEL="claude-haiku-4-5")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("I drink tea"))
        await rec.wait_text("Noted.")
        await eventually(lambda: len(fake.calls) == 2)
    assert "thinking" not in fake.calls[0].body and not thought_blocks(fake.calls[1])


@pytest.mark.parametrize(
    "reply",
    [
        Reply([thinking("only thought")]),  # a response that says nothing
        Reply([redacted(), text("Safe answer.")]),
        Reply([{"type": "server_notice_v9", "note": "x"}, text("Odd block.")]),
    ],
    ids=["thinking-only", "redacted", "unknown-block"],
)
async def test_odd_responses_end_in_a_clear_state_never_a_dead_conversation(
    tmp_path: Path, fake: FakeAnthropic, reply: Reply
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        return [text("Still here.")] if "again" in call.last_text else reply

    fake.responder = respond
    rec = Recorder()
    async with running_app(make_settings(tmp_path / "data", fake), [rec]) as app:
        app.human.accept(inbound("hi"))
        await eventually(lambda: len(fake.calls) == 1 and not app.coordinator.sessions)
        app.human.accept(inbound("again"))
        await rec.wait_text("Still here.")
    assert "only thought" not in json.dumps(rec.texts())


async def test_an_api_refusal_the_runtime_cannot_repair_is_one_sentence_and_a_log_line(
    tmp_path: Path, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if "poison" in call.last_text:
            return Reply([], status=400, error="messages.0: something we cannot repair")
        return [text("Fine now.")]

    fake.responder = respond
    rec = Recorder()
    with caplog.at_level(logging.WARNING):
        async with running_app(make_settings(tmp_path / "data", fake), [rec]) as app:
            app.human.accept(inbound("poison"))
            await rec.wait_text("refused this request")
            app.human.accept(inbound("hello"))
            await rec.wait_text("Fine now.")
    assert "something we cannot repair" in caplog.text
    assert len([t for t in rec.texts() if "refused" in t]) == 1


async def test_workers_and_one_off_calls_use_their_roles_model(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> list[dict[str, Any]]:
        if call.agent != "coordinator":
            return [tool("publish", result="done")]
        if "published its result" in call.last_text:
            return [text("Alice says: done")]
        if habit.after_tool_result(call):
            return []
        return [tool("spawn_worker", name="Alice", task="Do it.")]

    fake.responder = respond
    env = {"SWITCHBOARD_MODEL_WORKERS": "claude-opus-5", "SWITCHBOARD_EFFORT_WORKERS": "high",
           "SWITCHBOARD_MODEL_BACKGROUND": "anthropic:claude-haiku-5-5"}  # fmt: skip
    rec = Recorder()
    async with running_app(make_settings(tmp_path / "data", fake, **env), [rec]) as app:
        app.human.accept(inbound("go"))
        await rec.wait_text("Alice says: done")
        summary = await app.llm.complete("Summarise.", [], [{"role": "user", "content": "x"}],
                                         once=True)  # fmt: skip
    models = {(c.agent, c.body["model"], c.body["output_config"]["effort"]) for c in fake.calls}
    assert ("Alice", "claude-opus-5", "high") in models
    assert ("coordinator", "claude-sonnet-5", "low") in models
    assert fake.calls[-1].body["model"] == "claude-haiku-5-5" and summary.stop_reason
