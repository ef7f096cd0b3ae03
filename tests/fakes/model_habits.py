"""The habits of a real model, as scripts for the fake Anthropic API.

A real Claude model writes text beside its tool calls, ends a turn with an empty reply
after a tool result, answers a question in plain text in the middle of a task, runs
out of `max_tokens` (in text or inside a tool call), calls tools in parallel, declines,
pauses a long turn, and now and then sends arguments that are not a JSON object.
Each helper returns what a responder returns (tests/fakes/anthropic_api.py).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.anthropic_api import Call, Reply, text, tool

#: how the runtime's own lines to the model start (agents/loop/turns.py)
CONTINUE_MARK = "Continue exactly where it stopped"
REPEAT_MARK = "was cut off by the output limit (max_tokens) and was not run"
REMINDER_MARK = "your task is still open"
ANSWERED_MARK = "your reply was posted to"


def empty() -> Reply:
    """The empty end_turn a model often sends after a tool result."""
    return Reply([])


def whitespace() -> Reply:
    return Reply([text("\n\n  ")])


def cut_text(partial: str) -> Reply:
    """An answer cut at max_tokens."""
    return Reply([text(partial)], stop_reason="max_tokens")


def cut_call(name: str, before: str = "", **args: Any) -> Reply:
    """A tool call cut at max_tokens (its input as far as it got)."""
    blocks = [text(before)] if before else []
    return Reply([*blocks, tool(name, **args)], stop_reason="max_tokens")


def refusal(partial: str = "") -> Reply:
    return Reply([text(partial)] if partial else [], stop_reason="refusal")


def paused(partial: str) -> Reply:
    return Reply([text(partial)], stop_reason="pause_turn")


def bad_json(name: str) -> Reply:
    """A tool call whose arguments are not a JSON object."""
    call = tool(name)
    call["input"] = '{"content": "unterminated'
    return Reply([call])


def parallel(*calls: dict[str, Any], before: str = "") -> Reply:
    return Reply([*([text(before)] if before else []), *calls])


def asked_to_continue(call: Call) -> bool:
    return CONTINUE_MARK in call.last_text


def asked_to_repeat(call: Call) -> bool:
    return REPEAT_MARK in call.last_text


def reminded(call: Call) -> bool:
    return REMINDER_MARK in call.last_text


def after_tool_result(call: Call) -> bool:
    """The newest turn ends with a tool result (a person's words after it in the same
    turn, as the runtime joins them after an empty reply, ask for an answer)."""
    blocks = call.blocks()
    return bool(blocks) and blocks[-1].get("type") == "tool_result"
