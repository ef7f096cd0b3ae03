"""How a response is read (agents/loop/turns.py) and a refused conversation repaired
(agents/loop/repair.py), and the fake's strict validator itself: each rule refuses what
the real API refuses."""

from __future__ import annotations

from typing import Any

from agents.loop import repair, turns
from agents.memory.compaction import estimate_tokens
from agents.model.llm import ModelError
from agents.model.providers.anthropic_wire import anthropic_form
from tests.fakes.anthropic_rules import problems

IMAGE = {"type": "image", "source": {"type": "saved_file", "media_type": "image/png", "path": "a"}}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": list(messages)}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


USE = {"type": "tool_use", "id": "toolu_1", "name": "remember", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


def test_the_validator_refuses_what_the_api_refuses() -> None:
    assert problems(body(user(text("hi")), assistant(USE), user(RESULT))) == []
    assert problems(body(user(text("hi")), user(text("again"))))  # roles alternate
    assert problems(body(user(text("  "))))  # whitespace-only text
    assert problems(body(user(text("hi")), assistant(USE), user(text("x"))))  # unanswered
    assert problems(body(user(text("hi")), assistant(USE), user(text("x"), RESULT)))  # order
    assert problems(body(user(text("hi")), assistant())) == []  # an empty final prefill
    assert problems(body(user(text("hi")), assistant(text("cut "))))  # trailing whitespace
    assert problems(body(user(text("hi")), assistant(), user(text("x"))))  # empty message
    assert problems(body(user(text("hi")), assistant({**USE, "input": "{bad"}), user(RESULT)))
    assert problems({**body(user(text("hi"))), "tools": [{"name": "a b", "input_schema": {}}]})


def test_the_validator_takes_input_examples_and_refuses_other_tool_fields() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    def tools(**extra: Any) -> dict[str, Any]:
        return {**body(user(text("hi"))), "tools": [{"name": "t", "input_schema": schema, **extra}]}

    assert problems(tools(input_examples=[{"n": 1}], cache_control={"type": "ephemeral"})) == []
    assert problems(tools(examples=[{"n": 1}])) == [
        "tools.0.custom.examples: Extra inputs are not permitted"
    ]
    assert problems(tools(input_examples=[{"n": "one"}]))  # not valid against its schema
    assert problems(tools(input_examples={"n": 1}))  # a list of objects


def test_stop_reasons_are_read_and_unknown_ones_are_end_turn() -> None:
    assert turns.stop_of("max_tokens") == "max_tokens"
    assert turns.stop_of("pause_turn") == "pause_turn"
    assert turns.stop_of("refusal") == "refusal"
    assert turns.stop_of("model_context_window_exceeded") == "context_full"  # not continued
    assert turns.stop_of("tool_use") == turns.stop_of("stop_sequence") == "end_turn"
    assert turns.stop_of("something_new") == "end_turn"


THOUGHT = {"type": "thinking", "thinking": "plan", "signature": "c2ln"}
REDACTED = {"type": "redacted_thinking", "data": "b3BhcXVl"}


def test_clean_keeps_what_the_api_accepts_back_and_thinking_verbatim() -> None:
    unsigned = {"type": "thinking", "thinking": "cut before its signature"}
    content = [THOUGHT, REDACTED, text(" "), text("Hi"), {**USE, "input": None}, unsigned]
    assert turns.clean(content) == [THOUGHT, REDACTED, text("Hi"), {**USE, "input": {}}]
    # arguments a model wrote that are not JSON (an `openai:` model) stay its text: the
    # toolbox answers them, and Anthropic's API gets them as an object (anthropic_wire)
    assert turns.clean([{**USE, "input": "oops"}]) == [{**USE, "input": "oops"}]
    sent = anthropic_form(body(user(text("hi")), assistant(USE | {"input": "oops"}), user(RESULT)))
    assert problems(sent) == []


def test_a_reply_that_says_nothing_is_not_stored_and_silence_has_tokens() -> None:
    messages = [user(text("hi")), assistant(THOUGHT, USE), user(RESULT)]
    turns.add_reply(messages, [THOUGHT])  # thinking only: nothing for the person
    turns.add_reply(messages, [])
    assert len(messages) == 3
    assert turns.silent("NO_REPLY") and turns.silent(" (no reply) ") and turns.silent("")
    assert not turns.silent("No reply from the server yet.")


def test_a_declined_turn_leaves_the_context_and_the_next_one_works() -> None:
    messages = [user(text("hi")), assistant(text("hello")), user(text("exploit CVE?"))]
    messages += [assistant(THOUGHT, USE), user(RESULT)]
    turns.decline(messages)
    assert "exploit" not in str(messages) and THOUGHT not in messages[-1]["content"]
    assert messages[:2] == [user(text("hi")), assistant(text("hello"))]
    assert turns.closed(messages[-1]) and messages[-1]["content"][0]["text"].startswith("[Switch")
    messages[-1]["content"].append(text("how do we patch it?"))  # the next message joins it
    assert problems(body(*messages)) == []


def test_a_declined_turn_after_tool_results_keeps_the_results() -> None:
    messages = [user(text("hi")), assistant(USE), user(RESULT, text("now this"))]
    turns.decline(messages)
    assert messages[-1]["content"][0] == RESULT and "now this" not in str(messages)
    assert turns.closed(messages[-1])


def test_thinking_before_the_current_cycle_can_be_left_out_after_a_compaction() -> None:
    messages = [user(text("a")), assistant(THOUGHT, text("b")), user(text("c"))]
    messages += [assistant(REDACTED, USE), user(RESULT)]
    repair.drop_thinking(messages)
    assert messages[1] == assistant(text("b"))
    assert messages[3] == assistant(REDACTED, USE)  # the open cycle's stays


class StatusError(Exception):
    """Stands for the SDK's APIStatusError: what agents/model/llm.py raises ModelError from."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def refused(status: int, message: str) -> ModelError:
    cause = StatusError(status)
    try:
        raise ModelError(message) from cause
    except ModelError as exc:
        return exc


def test_a_refused_image_becomes_a_note_and_the_request_is_tried_again() -> None:
    messages = [user(text("look"), IMAGE), assistant(text("nice")), user(text("again"))]
    assert repair.repair(messages, refused(400, "image exceeds 5 MB"))
    assert IMAGE not in messages[0]["content"]
    assert "Image left out" in messages[0]["content"][1]["text"]
    assert not repair.repair(messages, refused(400, "something else"))  # nothing left to strip
    assert not repair.repair(messages, refused(401, "bad key"))


def test_an_unrepairable_turn_is_replaced_by_a_note_so_the_next_one_works() -> None:
    messages = [user(text("hi")), assistant(USE), user(RESULT, text("POISON"))]
    repair.refused(messages, refused(400, "cannot process"))
    assert "POISON" not in str(messages)
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_1"
    assert turns.closed(messages[-1])  # nothing waits for the model after a restart
    assert "assistant" not in str(messages[2:])  # no words put in the model's mouth
    messages[-1]["content"].append(text("next"))
    assert problems(body(*messages)) == []


def test_a_prompt_too_long_drops_the_oldest_half_at_a_persons_turn() -> None:
    messages = [user(text(f"q{i}")) if i % 2 == 0 else assistant(text(f"a{i}")) for i in range(8)]
    assert repair.repair(messages, refused(400, "prompt is too long: 300000 tokens"))
    assert messages[0] == user(text("q4")) and len(messages) == 4


def test_images_and_documents_count_toward_the_compaction_estimate() -> None:
    plain = [user(text("look"))]
    with_image = [user(text("look"), IMAGE)]
    assert estimate_tokens("", [], with_image) - estimate_tokens("", [], plain) >= 1500


def test_a_restart_between_text_and_tools_answers_the_calls_as_not_run() -> None:
    messages = [user(text("hi")), assistant(text("On it."), USE)]
    results = turns.interrupted_results(messages)
    assert results[0]["tool_use_id"] == "toolu_1" and results[0]["is_error"]
    assert problems(body(*messages, user(*results))) == []


def test_an_answer_cut_before_a_restart_is_still_sent_whole() -> None:
    messages = [
        user(text("story")),
        assistant(text("Once upon ")),
        user(text(turns.CONTINUE)),
        assistant(text("a time, ")),
        user(text(turns.CONTINUE)),
    ]
    assert "".join(turns.held_text(messages)) == "Once upon a time, "
    cut_call = [user(text("go")), assistant(text("(cut off)")), user(text(turns.REPEAT_CALL))]
    assert turns.held_text(cut_call) == [""]
    assert turns.held_text([user(text("hi"))]) == []


def test_refused_again_after_a_refused_turn_the_history_is_left_out() -> None:
    messages = [user(text("old poison")), assistant(text("ok")), user(text("hi"))]
    assert not repair.repair(messages, refused(400, "bad"))
    repair.refused(messages, refused(400, "bad"))
    messages[-1]["content"].append(text("hello?"))
    assert repair.repair(messages, refused(400, "bad"))  # tried again without the history
    assert "old poison" not in str(messages) and "hello?" in str(messages)
    assert problems(body(*messages)) == []


def test_a_cycle_stored_without_its_thinking_goes_on_as_text_on_a_thinking_model() -> None:
    """A worker parked by a version that dropped thinking: the thinking model refuses the
    bare cycle, so its call and result become text and the turn goes on."""
    messages = [user(text("research")), assistant(text("Asking."), USE), user(RESULT)]
    expected = "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but..."
    assert not repair.unthought_cycle(messages, refused(400, "something else"))
    assert repair.unthought_cycle(messages, refused(400, expected))
    assert messages[1] == assistant(text("Asking."), text("[I called remember with {}]"))
    assert messages[2] == user(text("[Result of remember]: ok"))
    assert problems(body(*messages)) == []
