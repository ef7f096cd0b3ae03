"""What a model response means for the conversation: its `stop_reason` read, its
content cleaned so the stored conversation stays acceptable to the API, and the
runtime's own lines to the model (continue a cut answer, repeat a cut call, the task
is still open, a restart cut a call off).

Pure functions on content blocks and message lists; the node loop (agents/loop/loop.py)
decides what to do with them.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

log = logging.getLogger(__name__)

Messages = list[dict[str, Any]]
Blocks = list[dict[str, Any]]
#: how a response ended, as the loop acts on it
Stop = Literal["end_turn", "max_tokens", "refusal", "pause_turn"]
_KNOWN: dict[str, Stop] = {
    "end_turn": "end_turn",
    "tool_use": "end_turn",  # the calls in the content say it; nothing else to do
    "stop_sequence": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
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
LIMIT_NOTE = "(Stopped here: the turn limit was reached.)"
EMPTY_NOTE = "(no reply)"
DECLINED_NOTE = "(declined)"
CUT_NOTE = "(cut off)"
MEDIA_NOTE = "[{kind} left out: the model's API refused it ({error})]"
REFUSAL_MARK = "(The model refused the request: "
HISTORY_NOTE = "[The earlier conversation was left out: the model's API refused it.]"
REFUSED_NOTE = "[This part could not be sent to the model: the API refused it ({error})]"


def stop_of(reason: str | None) -> Stop:
    """The loop's reading of a `stop_reason`; an unknown one is logged, taken as end_turn."""
    stop = _KNOWN.get(reason or "end_turn")
    if stop is None:
        log.warning("unknown stop_reason %r taken as end_turn", reason)
        return "end_turn"
    return stop


def clean(content: Blocks) -> Blocks:
    """The response as it may be stored: no empty or whitespace-only text blocks, and
    every tool call's input a JSON object (the API refuses anything else in history)."""
    out: Blocks = []
    for block in content:
        if block.get("type") == "text":
            if str(block.get("text", "")).strip():
                out.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "tool_use":
            args = block.get("input")
            out.append({**block, "input": args if isinstance(args, dict) else {}})
    return out


def text_of(content: Blocks) -> str:
    """The text blocks, in order, as one message."""
    return "\n\n".join(b["text"].strip() for b in content if b.get("type") == "text").strip()


def raw_text(content: Blocks) -> str:
    """The text blocks as written (a cut answer's pieces are joined as they are)."""
    return "\n\n".join(b["text"] for b in content if b.get("type") == "text")


def rstripped(content: Blocks) -> Blocks:
    """The content without trailing whitespace (a request may end with it: the API
    refuses a final assistant message that ends in whitespace)."""
    if content and content[-1].get("type") == "text":
        return [*content[:-1], text_block(content[-1]["text"].rstrip())]
    return content


def calls_of(content: Blocks) -> Blocks:
    return [b for b in content if b.get("type") == "tool_use"]


def without_calls(content: Blocks) -> Blocks:
    return [b for b in content if b.get("type") != "tool_use"]


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def add_reply(messages: Messages, content: Blocks, placeholder: str = EMPTY_NOTE) -> None:
    """Store a response: extend a trailing assistant message (a paused or continued
    turn), else append one; never an empty one (the API refuses it)."""
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["content"] = [*_blocks(messages[-1]["content"]), *content]
        return
    messages.append({"role": "assistant", "content": content or [text_block(placeholder)]})


def held_text(messages: Messages) -> list[str]:
    """The text of an answer still being continued (a restart came between a cut
    response and its continuation): the pieces before the trailing continue notes."""
    pieces: list[str] = []
    i = len(messages) - 1
    while i >= 1 and messages[i]["role"] == "user" and _is_continue(messages[i]):
        reply = _blocks(messages[i - 1]["content"])
        pieces.insert(0, raw_text([b for b in reply if b.get("text") != CUT_NOTE]))
        i -= 2
    return pieces


def _is_continue(message: dict[str, Any]) -> bool:
    texts = [b.get("text", "") for b in _blocks(message["content"])]
    cut = REPEAT_CALL.split("{", 1)[0]
    return bool(texts) and all(t == CONTINUE or t.startswith(cut) for t in texts)


def dangling_calls(messages: Messages) -> Blocks:
    """Tool calls of the last assistant message that no user turn answers yet."""
    if not messages or messages[-1]["role"] != "assistant":
        return []
    return calls_of(_blocks(messages[-1]["content"]))


def interrupted_results(messages: Messages) -> Blocks:
    """Error results for calls a restart cut off (delivered text, tools never run)."""
    return [
        {"type": "tool_result", "tool_use_id": c["id"], "content": INTERRUPTED, "is_error": True}
        for c in dangling_calls(messages)
    ]


def has_results(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks(message["content"]))


def reminded(messages: Messages) -> bool:
    """Whether the user turn before the last response was the open-task reminder."""
    if len(messages) < 2 or messages[-1]["role"] != "assistant":
        return False
    return any(b.get("text") == REMINDER for b in _blocks(messages[-2]["content"]))


def last_words(messages: Messages) -> str:
    """The newest text the model wrote in its last two responses (a text answer followed
    by an empty reply still counts as the answer), an answer cut at max_tokens whole."""
    for i in range(len(messages) - 1, max(len(messages) - 4, 0) - 1, -1):
        if messages[i]["role"] != "assistant":
            continue
        text = "".join([*held_text(messages[:i]), raw_text(_blocks(messages[i]["content"]))])
        if text.strip() not in ("", EMPTY_NOTE, DECLINED_NOTE, CUT_NOTE):
            return text.strip()
    return ""


#: what an image costs the model: up to about 1,600 tokens (a ~1.15 megapixel image;
#: larger ones are scaled down), while its stored reference is a few characters
IMAGE_TOKENS = 1600
#: a PDF is read page by page as text and an image (~1,500-3,000 tokens a page); the
#: stored reference does not know its pages, so a few pages' worth is counted
DOCUMENT_TOKENS = 10_000


def media_tokens(messages: Messages) -> int:
    """The tokens of the images and documents a conversation shows the model, which
    its JSON size does not tell (they count toward compaction)."""
    blocks = [b for m in messages for b in _blocks(m["content"])]
    blocks += [
        b
        for r in blocks
        if r.get("type") == "tool_result" and isinstance(r.get("content"), list)
        for b in r["content"]
    ]
    images = sum(1 for b in blocks if b.get("type") == "image")
    documents = sum(1 for b in blocks if b.get("type") == "document")
    return images * IMAGE_TOKENS + documents * DOCUMENT_TOKENS


def strip_media(messages: Messages, error: str) -> int:
    """Replace every image and document block by a note; how many were replaced."""
    count = 0
    for message in messages:
        message["content"], n = _strip(_blocks(message["content"]), error)
        count += n
    return count


def _strip(content: Blocks, error: str) -> tuple[Blocks, int]:
    out: Blocks = []
    count = 0
    for block in content:
        if block.get("type") in ("image", "document"):
            kind = "Image" if block["type"] == "image" else "Document"
            out.append(text_block(MEDIA_NOTE.format(kind=kind, error=error[:200])))
            count += 1
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            inner, n = _strip(block["content"], error)
            out.append({**block, "content": inner})
            count += n
        else:
            out.append(block)
    return out, count


def drop_newest_turn(messages: Messages, error: str) -> bool:
    """Replace what the newest user turn carries by a note (tool results keep their ids);
    False when there is no user turn to repair."""
    if not messages or messages[-1]["role"] != "user":
        return False
    note = REFUSED_NOTE.format(error=error[:200])
    content = _blocks(messages[-1]["content"])
    results = [{**b, "content": note} for b in content if b.get("type") == "tool_result"]
    messages[-1]["content"] = results or [text_block(note)]
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
    turn refused again; whether the
    conversation changed so that the request may be tried once more."""
    if _status(exc) not in (400, 413):
        return False
    if strip_media(messages, str(exc)):
        return True
    if "too long" in str(exc).lower() and drop_oldest(messages):
        return True
    return drop_history(messages)


def refused(messages: Messages, exc: Exception) -> None:
    """Nothing to repair: a request error replaces the refused turn by a note, and the
    refusal closes the turn, so the conversation goes on."""
    if _status(exc) in (400, 413):
        drop_newest_turn(messages, str(exc))
    add_reply(messages, [text_block(f"{REFUSAL_MARK}{exc})")])


def drop_history(messages: Messages) -> bool:
    """Refused again right after a refused turn was replaced: the cause is older, so the
    history before the newest person's turn is left out (a note says so)."""
    if not _refused_before(messages) or has_results(messages[-1]):
        return False
    newest = _blocks(messages[-1]["content"])
    messages[:] = [{"role": "user", "content": [text_block(HISTORY_NOTE), *newest]}]
    return True


def _refused_before(messages: Messages) -> bool:
    if len(messages) < 2 or messages[-2]["role"] != "assistant":
        return False
    return any(
        str(b.get("text", "")).startswith(REFUSAL_MARK) for b in _blocks(messages[-2]["content"])
    )


def _status(exc: Exception) -> int | None:
    """The HTTP status of the API error behind `exc` (agents/model/llm.py raises from it)."""
    status = getattr(exc.__cause__, "status_code", None)
    return status if isinstance(status, int) else None


def _blocks(content: Any) -> Blocks:
    return [text_block(content)] if isinstance(content, str) else list(content)
