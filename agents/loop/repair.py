"""Edits of a conversation's history, the only ones besides its growth at the end:
a request the API refused (400/413) is repaired (media stripped, the older half cut,
a refused turn replaced by a note, the history before it left out), a tool-use cycle
stored without its thinking is turned into text, and the thinking before the current
cycle goes once the prefix it was bound to changed.

Pure functions on message lists, as agents/loop/turns.py; agents/loop/calling.py decides
when to call them.
"""

from __future__ import annotations

import json

from agents.loop.media import strip_media
from agents.loop.turns import REFUSED_NOTE, calls_of, close, has_results
from agents.model.blocks import (
    THINKING,
    Block,
    Blocks,
    Messages,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    blocks_of,
    text_block,
    text_in,
)

HISTORY_NOTE = "[The earlier conversation was left out: the model's API refused it.]"


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
