"""What a model response means for the conversation: its `stop_reason` read, its
content cleaned so the stored conversation stays acceptable to the API, and the
runtime's own lines to the model (continue a cut answer, repeat a cut call, the task
is still open, a restart cut a call off).

Nothing the runtime writes is stored as the model's own words: an empty reply is not
stored at all, and a turn the runtime closes (stopped, out of turns, refused by the
API, declined by the model) ends with a runtime note in the user's turn, which also
tells a restart that nothing waits for the model. The history only grows at its end,
so thinking blocks stay bound to an unchanged prefix, except where the API refused
the conversation (then it is repaired: agents/loop/repair.py) or the model declined
(then the declined turn is taken out, as Anthropic asks).

Pure functions on content blocks and message lists; the agent loop (agents/loop/loop.py)
decides what to do with them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from agents.model.blocks import (
    Block,
    Blocks,
    Message,
    Messages,
    ToolResultBlock,
    ToolUseBlock,
    blocks_of,
    text_block,
    text_in,
)

log = logging.getLogger(__name__)
#: how a response ended, as the loop acts on it
Stop = Literal["end_turn", "max_tokens", "refusal", "pause_turn", "context_full"]
_KNOWN: dict[str, Stop] = {
    "end_turn": "end_turn",
    "tool_use": "end_turn",  # the calls in the content say it; nothing else to do
    "stop_sequence": "end_turn",
    "max_tokens": "max_tokens",
    # the context window is full: the answer is cut, and continuing would only add to
    # the context; the loop compacts the conversation and asks again
    "model_context_window_exceeded": "context_full",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}

#: the stops whose next response goes on with the same answer
CONTINUED = ("max_tokens", "pause_turn")
CONTINUE = (
    "[Switchboard: your reply was cut off by the output limit (max_tokens). Continue exactly "
    "where it stopped, without repeating what you already wrote.]"
)
REPEAT_CALL = (
    "[Switchboard: your call to {names} was cut off by the output limit (max_tokens) and was "
    "not run. Make the call again, smaller (split a long argument over several calls).]"
)
REMINDER = (
    "[Switchboard: your task is still open: publish when done, ask_human to ask, or keep "
    "working. Reply with text only again and that text becomes your result.]"
)
ANSWERED = (
    "[Switchboard: your reply was posted to {who}. Your task is still open: keep working, "
    "and publish when done.]"
)
INTERRUPTED = "Not run: Switchboard restarted before this call ran. Call it again if needed."
#: how the runtime's notes that close a turn start: after one, nothing waits for the
#: model (`Conversation.awaits_model`), and a person's next message follows it
CLOSED = "[Switchboard: "
LIMIT_NOTE = CLOSED + "the turn limit was reached; this turn ended here.]"
REFUSED_NOTE = CLOSED + "this part could not be sent to the model: the API refused it ({error})]"
DECLINED_NOTE = CLOSED + "a message here was declined by the model and taken out.]"
FULL_NOTE = CLOSED + "the context window was full and nothing more could be cut.]"
#: what older versions stored as the model's words (still read in old conversations),
#: and the tokens of silence a model writes: a reply that is only one of them is silence
PLACEHOLDERS = ("(no reply)", "(declined)", "(cut off)", "(no result)")
SILENCE = frozenset(
    p.casefold() for p in (*PLACEHOLDERS, "NO_REPLY", "NO REPLY", "HEARTBEAT_OK", "(silence)")
)


def stop_of(reason: str | None) -> Stop:
    """The loop's reading of a `stop_reason`; an unknown one is logged, taken as end_turn."""
    stop = _KNOWN.get(reason or "end_turn")
    if stop is None:
        log.warning("unknown stop_reason %r taken as end_turn", reason)
        return "end_turn"
    return stop


def clean(content: Sequence[Block]) -> Blocks:
    """The response as it may be stored: no empty or whitespace-only text blocks, every
    tool call's input a JSON object or the text a model wrote that is not one (the
    toolbox answers it with an error; agents/model/providers/anthropic_wire.py sends it
    to Anthropic's API as an object), and thinking blocks exactly as they came, but one
    cut before its signature (the API takes none without)."""
    out: Blocks = []
    for block in content:
        if block["type"] == "text":
            if block["text"].strip():
                out.append(text_block(block["text"]))
        elif block["type"] == "tool_use":
            args: object = block.get("input")  # what a server wrote may be any JSON
            out.append({**block, "input": args if isinstance(args, dict | str) else {}})
        elif block["type"] == "thinking" and block.get("signature"):
            out.append({"type": "thinking", "thinking": block.get("thinking", ""),
                        "signature": block["signature"]})  # fmt: skip
        elif block["type"] == "redacted_thinking" and block.get("data"):
            out.append({"type": "redacted_thinking", "data": block["data"]})
    return out


def said(content: Sequence[Block]) -> bool:
    """Whether a response says or does anything (text or a call), beyond thinking."""
    return any(b["type"] in ("text", "tool_use") for b in content)


def silent(text: str) -> bool:
    """A reply that is empty or only a token of silence (`NO_REPLY`, a placeholder)."""
    return text.strip().casefold() in SILENCE or not text.strip()


def text_of(content: Sequence[Block]) -> str:
    """The text blocks, in order, as one message."""
    return "\n\n".join(b["text"].strip() for b in content if b["type"] == "text").strip()


def raw_text(content: Sequence[Block]) -> str:
    """The text blocks as written (a cut answer's pieces are joined as they are)."""
    return "\n\n".join(b["text"] for b in content if b["type"] == "text")


def rstripped(content: Blocks) -> Blocks:
    """The content without trailing whitespace (a request may end with it: the API
    refuses a final assistant message that ends in whitespace)."""
    if content and (last := content[-1])["type"] == "text":
        return [*content[:-1], text_block(last["text"].rstrip())]
    return content


def calls_of(content: Sequence[Block]) -> list[ToolUseBlock]:
    return [b for b in content if b["type"] == "tool_use"]


def without_calls(content: Sequence[Block]) -> Blocks:
    return [b for b in content if b["type"] != "tool_use"]


def add_reply(messages: Messages, content: Blocks) -> None:
    """Store a response: extend a trailing assistant message (a paused turn), else
    append one. A response that says nothing (empty, or thinking only) is not stored:
    the API refuses an empty message, and a placeholder would teach the model to say it."""
    if not said(content):
        return
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["content"] = [*blocks_of(messages[-1]["content"]), *content]
        return
    messages.append({"role": "assistant", "content": content})


def close(messages: Messages, note: str) -> None:
    """End a turn the runtime closes with its note in the user's turn (after the tool
    results of any call still open), so nothing waits for the model."""
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"] = [*blocks_of(messages[-1]["content"]), text_block(note)]
    else:
        messages.append({"role": "user", "content": [text_block(note)]})


def closed(message: Message) -> bool:
    """Whether a user turn ends with a runtime note that closed it."""
    blocks = blocks_of(message["content"])
    return bool(blocks) and text_in(blocks[-1]).startswith(CLOSED)


def decline(messages: Messages) -> None:
    """The model declined (`stop_reason: refusal`): Anthropic's docs ask to reset the
    context, else every later request is declined too. The turn that led to it (from
    the newest message that brought new words, not only tool results) is taken out, a
    note says so; the tool results before it stay, their calls were made."""
    start = turn_start(messages)
    if start is None:
        return
    results = [b for b in blocks_of(messages[start]["content"]) if b["type"] == "tool_result"]
    del messages[start:]
    if results:
        messages.append({"role": "user", "content": [*results]})
    close(messages, DECLINED_NOTE)


def turn_start(messages: Messages) -> int | None:
    """The newest user message that holds more than tool results."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message["role"] == "user" and any(
            b["type"] != "tool_result" for b in blocks_of(message["content"])
        ):
            return i
    return None


def held_text(messages: Messages) -> list[str]:
    """The text of an answer still being continued (a restart came between a cut
    response and its continuation): the pieces before the trailing continue notes."""
    pieces: list[str] = []
    i = len(messages) - 1
    while i >= 1 and messages[i]["role"] == "user" and _is_continue(messages[i]):
        reply = blocks_of(messages[i - 1]["content"])
        pieces.insert(0, raw_text([b for b in reply if text_in(b) not in PLACEHOLDERS]))
        i -= 2
    return pieces


def drop_continue_note(messages: Messages) -> None:
    """An empty reply to a continue note: the cut answer before it was whole. The note
    goes, so the stored talk ends with that answer and nothing reads it as still held."""
    if len(messages) > 1 and messages[-1]["role"] == "user" and _is_continue(messages[-1]):
        messages.pop()


def _is_continue(message: Message) -> bool:
    texts = [text_in(b) for b in blocks_of(message["content"])]
    cut = REPEAT_CALL.split("{", 1)[0]
    return bool(texts) and all(t == CONTINUE or t.startswith(cut) for t in texts)


def dangling_calls(messages: Messages) -> list[ToolUseBlock]:
    """Tool calls of the last assistant message that no user turn answers yet."""
    if not messages or messages[-1]["role"] != "assistant":
        return []
    return calls_of(blocks_of(messages[-1]["content"]))


def interrupted_results(messages: Messages) -> list[ToolResultBlock]:
    """Error results for calls a restart cut off (delivered text, tools never run)."""
    return [
        {"type": "tool_result", "tool_use_id": c["id"], "content": INTERRUPTED, "is_error": True}
        for c in dangling_calls(messages)
    ]


def has_results(message: Message) -> bool:
    return any(b["type"] == "tool_result" for b in blocks_of(message["content"]))


def reminded(messages: Messages) -> bool:
    """Whether the newest user turn, answered or not (an empty answer is not stored),
    was the open-task reminder."""
    i = len(messages) - 1
    if i >= 0 and messages[i]["role"] == "assistant":
        i -= 1
    if i < 0 or messages[i]["role"] != "user":
        return False
    return any(text_in(b) == REMINDER for b in blocks_of(messages[i]["content"]))


def last_words(messages: Messages) -> str:
    """The newest text the model wrote in its last two responses (a text answer followed
    by an empty reply still counts as the answer), an answer cut at max_tokens whole."""
    for i in range(len(messages) - 1, max(len(messages) - 4, 0) - 1, -1):
        if messages[i]["role"] != "assistant":
            continue
        text = "".join([*held_text(messages[:i]), raw_text(blocks_of(messages[i]["content"]))])
        if not silent(text):
            return text.strip()
    return ""
