"""The model contract for workers (ARCHITECTURE.md, "How agents use the model") checked
from outside through Slack: a worker's answers to people, cut at max_tokens, beside tool
calls or across a restart, reach the asker whole and once; a task ends only as the
contract says; the coordinator's silence posts nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.script import coordinator_spawning_alice
from tests.kits.slack_kit import (
    MENTION,
    post_with,
    posted,
    slack_app,
    slack_settings,
    texts,
)

REFUSAL = {
    "type": "refusal",
    "category": "cyber",
    "explanation": "This looks like exploit development.",
}


async def test_a_workers_answer_cut_at_max_tokens_reaches_the_asker_whole(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.asked_to_continue(call):
            return [text("the rest is done.")]
        if "how far are you" in call.last_text:
            return habit.cut_text("Half of it is done, ")
        if habit.ANSWERED_MARK in call.last_text:
            return [tool("publish", result="GPUs are pricey.")]
        return Reply([tool("remember", content="working")], delay=0.1)

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return alice(call)
        if "published its result" in call.last_text:
            return [text("Alice finished: GPUs are pricey.")]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} research GPUs", channel="C1")
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        asked = slack.post(f"{MENTION} @Alice how far are you?", channel="C2")
        await slack.until(posted("Alice finished"))
    answer = post_with(slack, "Half of it")
    assert answer["text"] == "*Alice:* Half of it is done, the rest is done."
    assert (answer["channel"], answer["thread_ts"]) == ("C2", asked)
    assert sum("Half of it" in t for t in texts(slack)) == 1
    assert sum("Alice finished" in t for t in texts(slack)) == 1


async def test_a_workers_suggestion_the_coordinator_leaves_unanswered_posts_nothing(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            if not call.tool_results():
                return [tool("suggest_next", suggestion="check prices again tomorrow")]
            if "suggest_next" in str(fake.calls[-2].body) and len(call.tool_results()) == 1:
                return [tool("publish", result="done")]
            return habit.empty()
        if "published its result" in call.last_text:
            return [text("Alice is done.")]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        slack.post(f"{MENTION} research GPUs", channel="C1")
        await slack.until(posted("Alice is done"))
        await eventually(lambda: not app.coordinator.sessions and not app.team.workers)
    assert texts(slack) == ["*coordinator:* Alice is done."]


async def test_a_workers_text_result_cut_at_max_tokens_is_taken_whole(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.reminded(call):
            return habit.empty()  # the text before was the answer
        if habit.asked_to_continue(call):
            return [text("B is cheaper, C is fastest.")]
        return habit.cut_text("Prices: A is dearest, ")

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return alice(call)
        if "published its result" in call.last_text:
            return [text("Alice finished: " + call.last_text.split("result]: ", 1)[1])]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} research GPUs", channel="C1")
        await slack.until(posted("Alice finished"))
    assert texts(slack) == [
        "*coordinator:* Alice finished: Prices: A is dearest, B is cheaper, C is fastest."
    ]


async def test_a_task_the_model_declines_ends_once_told_and_is_not_asked_again(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Anthropic: after a refusal the context must be reset, or every request is declined
    again. A worker's declined turn is its task: the task ends, the person hears why
    once, and the coordinator is told the task could not be done."""

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return Reply([], stop_reason="refusal", stop_details=REFUSAL)
        if "could not do this task" in call.last_text:
            return [text("Alice could not do that one.")]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        ts = slack.post(f"{MENTION} research GPUs", channel="C1")
        await slack.until(posted("Alice could not do that one."))
        await eventually(lambda: not app.team.workers and not app.coordinator.sessions)
        assert [w.status for w in app.store.agents.workers()] == ["failed"]
    said = texts(slack)
    assert [t for t in said if "declined" in t] == [
        "*switchboard:* The model declined to answer that. It said: This looks like exploit "
        "development. I took it out of this conversation, so you can rephrase it or ask "
        "something else."
    ], said
    assert len([c for c in fake.calls if c.agent == "Alice"]) == 1  # never asked again
    assert all(p.get("thread_ts") == ts for p in slack.posts)


async def test_a_workers_answer_written_beside_a_tool_call_reaches_the_asker_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if "how far are you" in call.last_text:
            return [text("About halfway."), tool("remember", content="asked")]
        if any("About halfway" in str(m) for m in call.messages):
            return [tool("publish", result="GPUs are pricey.")]
        return Reply([tool("remember", content="working")], delay=0.1)

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return alice(call)
        if "published its result" in call.last_text:
            return [text("Alice finished: GPUs are pricey.")]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        slack.post(f"{MENTION} research GPUs", channel="C1")
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        asked = slack.post(f"{MENTION} @Alice how far are you?", channel="C2")
        await slack.until(posted("Alice finished"))
        await eventually(lambda: not app.team.workers and not app.coordinator.sessions)
    answer = post_with(slack, "About halfway")
    assert answer["text"] == "*Alice:* About halfway."
    assert (answer["channel"], answer["thread_ts"]) == ("C2", asked)
    assert sum("About halfway" in t for t in texts(slack)) == 1
    assert sum("Alice finished" in t for t in texts(slack)) == 1


async def test_a_question_to_a_worker_is_answered_after_a_restart(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    asked: list[Call] = []

    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if "how far are you" in call.last_text:
            asked.append(call)  # the first time the bot is stopped while the model thinks
            return Reply([text("About halfway.")], delay=5 if len(asked) == 1 else 0)
        if habit.ANSWERED_MARK in call.last_text:
            return [tool("publish", result="GPUs are pricey.")]
        return Reply([tool("remember", content="working")], delay=0.1)

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return alice(call)
        if "published its result" in call.last_text:
            return [text("Alice finished: GPUs are pricey.")]
        return coordinator_spawning_alice(call) or habit.empty()

    fake.responder = respond
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        slack.post(f"{MENTION} research GPUs", channel="C1")
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        question = slack.post(f"{MENTION} @Alice how far are you?", channel="C2")
        await eventually(lambda: len(asked) == 1)
    async with slack_app(settings):
        await slack.until(posted("Alice finished"))
    answer = post_with(slack, "About halfway")
    assert answer["text"] == "*Alice:* About halfway."
    assert (answer["channel"], answer["thread_ts"]) == ("C2", question)
