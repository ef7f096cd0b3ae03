"""What a model response means for the conversation: its `stop_reason` read, its
content cleaned so the stored conversation stays acceptable to the API, and the
runtime's own lines to the model (continue a cut answer, repeat a cut call, the task
is still open, a restart cut a call off).

Nothing the runtime writes is stored as the model's own words: an empty reply is not
stored at all, and a turn the runtime closes (stopped, out of turns, refused by the
API, declined by the model) ends with a runtime note in the user's turn, which also
tells a restart that nothing waits for the model. The history only grows at its end,
so thinking blocks stay bound to an unchanged prefix, except where the API refused
the conversation (then it is repaired) or the model declined (then the declined turn
is taken out, as Anthropic asks).

Pure functions on content blocks and message lists; the agent loop (agents/loop/loop.py)
decides what to do with them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Literal

from agents.loop.media import strip_media
from agents.model.blocks import (
    THINKING,
    Block,
    Blocks,
    Message,
    Messages,
    TextBlock,
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
HISTORY_NOTE = "[The earlier conversation was left out: the model's API refused it.]"
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


def in_tool_cycle(messages: Messages) -> bool:
    """Whether the newest user turn answers tool calls (the model is mid-task)."""
    return bool(messages) and messages[-1]["role"] == "user" and has_results(messages[-1])


def drop_thinking(messages: Messages) -> None:
    """Leave out thinking blocks before the current tool-use cycle (allowed: only the
    cycle's own must come back), after the history before them changed."""
    last = len(messages) - 2 if in_tool_cycle(messages) else len(messages)
    for message in messages[:last]:
        if message["role"] == "assistant":
            kept: Blocks = [b for b in blocks_of(message["content"]) if b["type"] not in THINKING]
            if kept:  # a stored reply always says something (add_reply)
                message["content"] = kept


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


def drop_newest_turn(messages: Messages, error: str) -> bool:
    """Replace what the newest user turn carries by a note that closes it (tool results
    keep their ids); False when there is no user turn to repair."""
    if not messages or messages[-1]["role"] != "user":
        return False
    note = REFUSED_NOTE.format(error=error[:200])
    content = blocks_of(messages[-1]["content"])
    results: Blocks = [{**b, "content": note} for b in content if b["type"] == "tool_result"]
    messages[-1]["content"] = [*results, text_block(note)]
    return True


def drop_oldest(messages: Messages) -> bool:
    """Cut the older half of a conversation at a person's turn (a prompt too long);
    False when no such cut exists."""
    for i in range(max(1, len(messages) // 2), len(messages)):
        message = messages[i]
        if message["role"] == "user" and not has_results(message):
            del messages[:i]
            return True
    return False


def repair(messages: Messages, exc: Exception) -> bool:
    """A request the API refuses (400): images and documents are the usual cause (too
    many, too large, a PDF over its page limit), then a prompt too long, then an older
    turn refused again; whether the conversation changed so that the request may be
    tried once more. A repair edits the history, so the thinking before the current
    tool-use cycle goes (newer models bind it to an unchanged prefix)."""
    if _status(exc) not in (400, 413):
        return False
    changed = (
        strip_media(messages, str(exc)) > 0
        or ("too long" in str(exc).lower() and drop_oldest(messages))
        or drop_history(messages)
    )
    if changed:
        drop_thinking(messages)
    return changed


#: how the API says a tool-use cycle came back without the thinking it opened with
_NO_THINKING = ("Expected `thinking` or `redacted_thinking`", "must start with a thinking block")


def unthought_cycle(messages: Messages, exc: Exception) -> bool:
    """A tool-use cycle stored without its thinking (by a version that dropped it, or
    from a model that did not think) that a thinking model refuses: its calls and their
    results become text, so the model goes on from there. Whether that was the cause."""
    if _status(exc) != 400 or not any(m in str(exc) for m in _NO_THINKING):
        return False
    if not in_tool_cycle(messages) or len(messages) < 2:
        return False
    calls = {c["id"]: c for c in calls_of(blocks_of(messages[-2]["content"]))}
    said: Blocks = [b for b in blocks_of(messages[-2]["content"]) if b["type"] == "text"]
    messages[-2]["content"] = said + [_call_text(c) for c in calls.values()]
    messages[-1]["content"] = [
        _result_text(b, calls.get(b["tool_use_id"])) if b["type"] == "tool_result"
        else b
        for b in blocks_of(messages[-1]["content"])
    ]  # fmt: skip
    drop_thinking(messages)
    return True


def _call_text(call: ToolUseBlock) -> TextBlock:
    args = json.dumps(call["input"] or {}, ensure_ascii=False)[:2000]
    return text_block(f"[I called {call['name']} with {args}]")


def _result_text(result: ToolResultBlock, call: ToolUseBlock | None) -> TextBlock:
    content = result.get("content")
    body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    name = call["name"] if call else "a tool"
    return text_block(f"[Result of {name}]: {body or '(empty)'}")


def refused(messages: Messages, exc: Exception) -> None:
    """Nothing to repair: a request error replaces the refused turn by a note that
    closes it, so the conversation goes on."""
    if not (_status(exc) in (400, 413) and drop_newest_turn(messages, str(exc))):
        close(messages, REFUSED_NOTE.format(error=str(exc)[:200]))


def drop_history(messages: Messages) -> bool:
    """Refused again right after a refused turn was replaced: the cause is older, so the
    history before the newest words (after that note) is left out, a note says so."""
    if not messages or messages[-1]["role"] != "user":
        return False
    blocks = blocks_of(messages[-1]["content"])
    notes = [i for i, b in enumerate(blocks) if _is_refused_note(b)]
    newest = [b for b in blocks[notes[-1] + 1 :] if b["type"] != "tool_result"] if notes else []
    if not newest:
        return False
    messages[:] = [{"role": "user", "content": [text_block(HISTORY_NOTE), *newest]}]
    return True


def _is_refused_note(block: Block) -> bool:
    text = block.get("content") if block["type"] == "tool_result" else text_in(block)
    return isinstance(text, str) and text.startswith(REFUSED_NOTE.split("{", 1)[0])


def _status(exc: Exception) -> int | None:
    """The HTTP status of the API error behind `exc` (agents/model/llm.py raises from it)."""
    status = getattr(exc.__cause__, "status_code", None)
    return status if isinstance(status, int) else None
