"""The transcript's types tell the truth (agents/model/blocks.py): a conversation the
runtime stored after a thinking model's tool-use cycle, and every request it sent, hold
exactly the keys and value types the TypedDicts name, so what mypy checks is what runs.
The check reads the types at run time (`typing.get_type_hints`), so a key the runtime
starts to store, or a kind it starts to send, without the types saying so fails here."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from agents.loop.turns import clean
from agents.model.blocks import Blocks, Messages
from agents.model.providers.anthropic_wire import anthropic_form
from agents.model.providers.base import Request
from agents.model.providers.openai_wire import Call as ChatCall
from agents.model.providers.openai_wire import Gathered
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, thinking, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.slack_kit import MENTION, posted, slack_app, slack_settings


def mismatches(value: Any, hint: Any, where: str = "") -> list[str]:
    """Where `value` is not of the type `hint` (TypedDicts, Literal, unions, lists, the
    plain types), as `path: what`; [] when it is."""
    origin = get_origin(hint)
    if hint is Any:
        return []
    if origin is NotRequired:
        return mismatches(value, get_args(hint)[0], where)
    if origin is Literal:
        return [] if value in get_args(hint) else [f"{where}: {value!r} not in {get_args(hint)}"]
    if origin in (Union, types.UnionType):
        found = [mismatches(value, arm, where) for arm in get_args(hint)]
        return [] if any(not f for f in found) else min(found, key=len)
    if typing.is_typeddict(hint):
        return _typeddict(value, hint, where)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [
            m
            for i, v in enumerate(value)
            for m in mismatches(v, get_args(hint)[0], f"{where}[{i}]")
        ]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: {type(value).__name__}, not a dict"]
    return [] if isinstance(value, hint) else [f"{where}: {type(value).__name__}, not {hint}"]


def _typeddict(value: Any, hint: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {type(value).__name__}, not {hint.__name__}"]
    fields = get_type_hints(hint, include_extras=True)
    required = {k for k, v in fields.items() if get_origin(v) is not NotRequired}
    out = [f"{where}: {hint.__name__} lacks {k!r}" for k in sorted(required - value.keys())]
    out += [
        f"{where}: {hint.__name__} has no key {k!r}" for k in sorted(value.keys() - fields.keys())
    ]
    for key in value.keys() & fields.keys():
        out += mismatches(value[key], fields[key], f"{where}.{key}")
    return out


def test_the_checker_can_fail() -> None:
    bad: list[Any] = [
        {"role": "user", "content": [{"type": "text"}]},  # no text
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}, "extra": 1}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use"}]}
            ],
        },
        {"role": "system", "content": "hi"},
    ]
    found = [mismatches([m], Messages) for m in bad]
    assert all(found), found
    assert mismatches([{"role": "user", "content": "hi"}], Messages) == []


def noting(call: Call) -> Reply | list[dict[str, Any]]:
    """Thinks, says it noted, calls `remember`; after the result, thinks and answers."""
    if "tool_result" in str(call.messages[-1]["content"]):
        return [thinking("that is stored"), text("Stored.")]
    return [thinking("a preference"), text("Noted."), tool("remember", content="tea")]


async def test_a_stored_tool_cycle_and_its_requests_are_the_typed_transcript(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = noting
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        ts = slack.post(f"{MENTION} I drink tea", channel="C1")
        await slack.until(posted("Stored."))
        await eventually(lambda: len(fake.calls) == 2)
        messages, _target = app.store.agents.load_conversation("coordinator", "slack:C1/" + ts)
    kinds = {b["type"] for m in messages for b in m["content"] if isinstance(m["content"], list)}
    assert {"text", "thinking", "tool_use", "tool_result"} <= kinds
    assert mismatches(messages, Messages) == []
    for call in fake.calls:
        body = {k: v for k, v in call.body.items() if k != "stream"}  # the SDK's own
        assert mismatches(body, Request) == []


def test_a_call_whose_arguments_are_not_json_is_stored_and_resent_as_typed() -> None:
    """An OpenAI-compatible server's call with arguments that are not JSON is kept as
    written (a string input, the types allow it) and sent to Anthropic's API wrapped."""
    gathered = Gathered(calls={0: ChatCall("functions.x:0", "x", "{not json")}, choices=1)
    gathered.finish = "tool_calls"
    content = clean(gathered.response().content)
    assert content[0]["type"] == "tool_use" and content[0]["input"] == "{not json"
    assert mismatches(content, Blocks) == []
    messages: Messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": content},
    ]
    sent = anthropic_form({"model": "m", "max_tokens": 9, "system": [], "messages": messages})
    assert mismatches(sent, Request) == []
    call: Any = sent["messages"][1]["content"][0]
    assert call["input"] == {"arguments_as_written": "{not json"}
    assert call["id"].startswith("functions_x_0_")  # an id Anthropic's API takes
